"""The final evaluation: nested refits and repeated cross-validation of every learner's best parameters."""

from __future__ import annotations

import time

import numpy as np

from automil.evaluation import fold_scores
from automil.folds import bag_folds, fold_splits, repeat_seeds
from automil.track.records import LearnerResult, TrialAttr
from automil.tune.ensembling import ENSEMBLE, Candidate, ensemble_row, loaded_scores, main_selection, stored_scores
from automil.tune.fits import fit_predict, fit_worker
from automil.tune.isolation import OutOfTime, run_tasks
from automil.tune.leaderboard import Evaluation, result_row
from automil.tune.listener import Listener
from automil.tune.plan import Plan
from automil.tune.studies import study_name
from automil.tune.tracking import Guarded
from automil.tune.trial_states import best_trial, defaults_trial, records, study_record

__all__ = ["final_evaluation"]


def final_evaluation(plan: Plan, bags, storage, worker, tracking: Guarded, listener: Listener) -> list[LearnerResult]:
    """Nested refits and repeated CV of every learner's best parameters, run on ``--jobs`` workers.

    A learner whose stored result matches its studies (same best trials, trial count, repeats and
    protocol) is not evaluated again.
    """
    import optuna

    from automil import plugins

    options = plan.options
    workers = [worker] + [fit_worker(options, spare=False) for _ in range(options.jobs - 1)]
    for w in workers:
        w.set_data(bags)
    rows, jobs, candidates = {}, {}, {}
    for learner in plan.learners:
        spec = plugins.get_learner(learner)
        main = optuna.load_study(study_name=study_name(plan.dataset, learner), storage=storage)
        subs = [optuna.load_study(study_name=study_name(plan.dataset, learner, i), storage=storage)
                for i in options.splits[1:]]
        trials = records(main)
        sub_trials = [records(s) for s in subs]
        best = best_trial(trials, options.directions)
        # An outer split the budget left untuned takes the learner's defaults: chosen before any data
        # was seen, they are as blind to its outer fold as a tuning on the other folds.
        defaults = defaults_trial(trials)
        tuned = [best_trial(t, options.directions) for t in sub_trials]
        outer_best = [t or defaults for t in tuned]
        key = {"trials": [len(t) for t in [trials, *sub_trials]],
               "best": [None if t is None else t.number for t in [best, *outer_best]],
               "repeats": options.repeats, "protocol": options.protocol}
        candidates[learner] = Candidate(trials, sub_trials)
        stored = main.user_attrs.get("result")
        # a result stored before ensembles kept no scores: it is computed again for the ensemble
        if stored is not None and stored.get("key") == key and ("scores" in stored or not options.ensemble):
            rows[learner] = LearnerResult.from_dict(stored["row"])
            candidates[learner].scores = loaded_scores(stored.get("scores", {}))
            candidates[learner].fit_seconds = rows[learner].fit_seconds
            _log_study(plan, tracking, spec, main)  # what this worker could not log as it went
            listener.learner_done(rows[learner])
            continue
        jobs[learner] = {"spec": spec, "main": main, "key": key,
                         "evaluation": Evaluation(learner, spec.plugin, main.study_name, trials, best, outer_best,
                                                  nested=[None] * len(subs),
                                                  tuned_splits=sum(t is not None for t in tuned))}
    tasks, owners = [], []
    seeds = repeat_seeds(options.seed, options.repeats)
    outer = fold_splits(plan.assignment)
    for learner, job in jobs.items():
        evaluation = job["evaluation"]
        for i, trial in enumerate(evaluation.outer_best):
            if trial is not None:
                train, test = outer[i]
                tasks.append((fit_predict, learner, trial.attrs[TrialAttr.ESTIMATOR_PARAMS], train,
                              test, options.seed))
                owners.append((learner, "nested", (i, test)))
    # every learner's model is logged; a learner whose stored result is reused is refitted when it is
    # a member of the ensemble, whose model is assembled from its members' full-data refits
    selection = main_selection(plan, bags, candidates) if options.ensemble else None
    members = set(selection.names) if selection is not None and tracking.enabled else set()
    for learner in plan.learners:
        best = best_trial(candidates[learner].trials, options.directions)
        if best is not None and tracking.enabled and (learner in jobs or learner in members):
            tasks.append((fit_predict, learner, best.attrs[TrialAttr.ESTIMATOR_PARAMS],
                          np.arange(bags.n_bags), None, options.seed, True))
            owners.append((learner, "model", None))
    try:
        for r, seed in enumerate(seeds):
            if r > 0 and time.time() >= plan.final_deadline:
                break
            splits = fold_splits(bag_folds(bags.y, options.folds, seed))
            for learner, job in jobs.items():
                if job["evaluation"].best is None:
                    continue
                params = job["evaluation"].best.attrs[TrialAttr.ESTIMATOR_PARAMS]
                for train, test in splits:
                    tasks.append((fit_predict, learner, params, train, test, options.seed))
                    owners.append((learner, "repeat", (r, test)))
            for index, out in run_tasks(workers, tasks, timeout=options.fit_timeout,
                                        budget=max(plan.final_deadline - time.time(), 0.0)):
                learner, kind, where = owners[index]
                _collect(jobs.get(learner), candidates[learner], kind, where, out, bags)
            tasks, owners = [], []
    finally:
        for w in workers[1:]:
            w.close()
    for learner, job in jobs.items():
        row = result_row(plan.dataset, options, job["evaluation"])
        candidate = candidates[learner]
        candidate.fit_seconds = row.fit_seconds
        row.model_uri = _log_study(plan, tracking, job["spec"], job["main"], row, candidate.model, bags)
        # one attribute, so that a worker never pairs one worker's row with another's key
        job["main"].set_user_attr("result", {"key": job["key"], "row": row.to_dict(),
                                             "scores": stored_scores(candidate.scores)})
        rows[learner] = row
        listener.learner_done(row)
    ordered = [rows[learner] for learner in plan.learners]
    if selection is not None:
        row, model = ensemble_row(plan, bags, candidates, selection)
        parent = tracking.study_run(row.study, plan.dataset, ENSEMBLE, {"automil.protocol": options.protocol})
        if parent is not None:
            row.model_uri = tracking.log_result(parent, row, model, bags)
        listener.learner_done(row)
        ordered.append(row)
    return ordered


def _log_study(plan: Plan, tracking: Guarded, spec, main, row=None, model=None, bags=None) -> str | None:
    """Log every finished trial of the study not logged yet (by any worker), then ``row``, if given, as
    its result; the URI of the logged model, if any."""
    parent = tracking.study_run(main.study_name, plan.dataset, spec, {"automil.protocol": plan.options.protocol})
    if parent is None:
        return None
    study = study_record(main) if row is not None else None
    for trial in study.trials if study is not None else records(main):
        if trial.finished:
            tracking.log_trial(parent, trial, main.study_name)
    if row is None:
        tracking.end_study(parent)
        return None
    return tracking.log_result(parent, row, model, bags, study)


def _collect(job, candidate: Candidate, kind, where, out, bags):
    """File one finished final-evaluation task (or its exception) under its learner (``job`` is ``None``
    for a learner whose stored result is reused: only its model is made again)."""
    if isinstance(out, OutOfTime) and kind == "repeat" and where[0] > 0:
        return  # the budget ended this repeat: it is left out, and `repeats` counts the complete ones
    if isinstance(out, Exception):
        if job is not None:
            job["evaluation"].errors.append(f"{kind} fit: {out}")
    elif kind == "model":
        candidate.model = out["model"]
    else:
        evaluation = job["evaluation"]
        index, test = where
        key = "nested" if kind == "nested" else ("repeat", index)
        if key not in candidate.scores:  # every bag's out-of-fold scores, for the ensemble
            candidate.scores[key] = np.full((bags.n_bags, *out["scores"].shape[1:]), np.nan)
        candidate.scores[key][test] = out["scores"]
        scores = fold_scores(bags.y[test], out["y_pred"])
        if kind == "nested" or index == 0:  # out-of-fold predictions for the confusion matrix
            evaluation.predictions.setdefault(kind, []).append((bags.y[test], out["y_pred"]))
        if kind == "nested":
            evaluation.nested[index] = scores
        else:
            evaluation.repeated.setdefault(index, []).append(scores)
            evaluation.fit_seconds.append(out["fit_seconds"])
