"""The final evaluation: nested refits, models and repeated cross-validation of every learner's best parameters.

It runs in the order the run needs its parts: the headline figure first (the nested refits, or the first
repeat under the tuned protocol), then the models, the one about to be chosen first, then more repeats
while the budget lasts.
"""

from __future__ import annotations

import time

import numpy as np

from automil.evaluation import fold_scores
from automil.folds import bag_folds, fold_splits, repeat_seeds
from automil.records import LearnerResult, TrialAttr
from automil.tune.ensembling import (ENSEMBLE, Candidate, ensemble_nested, ensemble_row, loaded_scores,
                                     main_selection, stored_scores)
from automil.tune.fits import fit_predict, fit_worker
from automil.tune.isolation import OutOfTime, run_tasks
from automil.tune.leaderboard import Evaluation, rank, result_row
from automil.tune.listener import Listener
from automil.tune.plan import Plan
from automil.tune.selection import choose
from automil.tune.studies import study_name
from automil.tune.tracking import Guarded
from automil.tune.trial_states import best_trial, defaults_trial, records, study_record

__all__ = ["final_evaluation"]

# Seconds MLflow takes to log one learner's result (its trials, model and figures; sqlite store, 2 cores).
LOG_SECONDS = 1.5


def final_evaluation(plan: Plan, bags, storage, worker, tracking: Guarded, listener: Listener) -> list[LearnerResult]:
    """Nested refits, models and repeated CV of every learner's best parameters, run on ``--jobs`` workers.

    A learner whose stored result matches its studies (same best trials, trial count, repeats and
    protocol) is not evaluated again. The model the run is about to choose is fitted even when the budget
    has run out (a run may pass ``--timeout`` by that one fit): a run must end with a model.
    """
    options = plan.options
    rows, jobs, candidates = _evaluations(plan, storage, tracking, listener)
    selection = main_selection(plan, bags, candidates) if options.ensemble else None
    nested = options.protocol == "nested"
    seeds = repeat_seeds(options.seed, options.repeats)
    workers = [worker] + [fit_worker(options, spare=False) for _ in range(options.jobs - 1)]
    for w in workers:
        w.set_data(bags)

    def run(work, deadline=plan.final_deadline):
        budget = None if deadline is None else max(deadline - time.time(), 0.0)
        for index, out in run_tasks(workers, [task for task, _ in work], timeout=options.fit_timeout, budget=budget):
            learner, kind, where = work[index][1]
            _collect(jobs.get(learner), candidates[learner], kind, where, out, bags, nested)

    # what the headline does not need leaves the time to log every result before the budget ends
    optional = plan.final_deadline - (LOG_SECONDS * (len(jobs) + 1) if tracking.enabled else 0.0)
    try:
        run(_nested_tasks(plan, jobs) if nested else _repeat_tasks(plan, bags, jobs, 0, seeds[0]))
        ensemble = ensemble_nested(plan, bags, candidates) if selection is not None else None
        now = _rows_now(plan, rows, jobs, candidates, selection, ensemble, bags)
        jobs = {learner: jobs[learner] for learner in sorted(jobs, key=lambda n: rank(now[n]))}  # best first
        if tracking.enabled:
            first, rest = _model_order(now, jobs, selection)
            run(_model_tasks(plan, bags, candidates, first), deadline=None)
            run(_model_tasks(plan, bags, candidates, rest), deadline=optional)
        for r in range(0 if nested else 1, len(seeds)):
            if time.time() >= optional:
                break
            run(_repeat_tasks(plan, bags, jobs, r, seeds[r]), deadline=optional)
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
        row, model = ensemble_row(plan, bags, candidates, selection, ensemble)
        parent = tracking.study_run(row.study, plan.dataset, ENSEMBLE, {"automil.protocol": options.protocol})
        if parent is not None:
            row.model_uri = tracking.log_result(parent, row, model, bags)
        listener.learner_done(row)
        ordered.append(row)
    return ordered


def _evaluations(plan: Plan, storage, tracking: Guarded, listener: Listener):
    """Every learner's stored row when it is still valid (``rows``), else what its final evaluation starts
    from (``jobs``), and every learner as the ensemble sees it (``candidates``)."""
    import optuna

    from automil import plugins

    options = plan.options
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
    return rows, jobs, candidates


def _nested_tasks(plan: Plan, jobs: dict) -> list:
    """The refits of every outer split's best parameters, scored on its outer fold."""
    outer = fold_splits(plan.assignment)
    work = []
    for learner, job in jobs.items():
        for i, trial in enumerate(job["evaluation"].outer_best):
            if trial is not None:
                train, test = outer[i]
                work.append(((fit_predict, learner, trial.attrs[TrialAttr.ESTIMATOR_PARAMS], train, test,
                              plan.options.seed), (learner, "nested", (i, test))))
    return work


def _repeat_tasks(plan: Plan, bags, jobs: dict, r: int, seed: int) -> list:
    """Repeat ``r`` of the repeated CV of every learner's best parameters, on folds drawn with ``seed``."""
    splits = fold_splits(bag_folds(bags.y, plan.options.folds, seed))
    work = []
    for learner, job in jobs.items():  # a learner's folds together: a repeat counts only when complete
        if job["evaluation"].best is not None:
            params = job["evaluation"].best.attrs[TrialAttr.ESTIMATOR_PARAMS]
            work += [((fit_predict, learner, params, train, test, plan.options.seed), (learner, "repeat", (r, test)))
                     for train, test in splits]
    return work


def _model_tasks(plan: Plan, bags, candidates: dict[str, Candidate], learners: list[str]) -> list:
    """The full-data refits of the ``learners``' best parameters (those with a best trial): the models
    tracking logs."""
    work = []
    for learner in learners:
        best = best_trial(candidates[learner].trials, plan.options.directions)
        if best is not None:
            work.append(((fit_predict, learner, best.attrs[TrialAttr.ESTIMATOR_PARAMS], np.arange(bags.n_bags),
                          None, plan.options.seed, True), (learner, "model", None)))
    return work


def _rows_now(plan: Plan, rows: dict, jobs: dict, candidates: dict[str, Candidate], selection, ensemble,
              bags) -> dict[str, LearnerResult]:
    """Every learner's row (and the ensemble's) from the headline fits made so far."""
    now = dict(rows)
    for learner, job in jobs.items():
        now[learner] = result_row(plan.dataset, plan.options, job["evaluation"])
        candidates[learner].fit_seconds = now[learner].fit_seconds
    if selection is not None:
        now[ENSEMBLE.name] = ensemble_row(plan, bags, candidates, selection, ensemble)[0]
    return now


def _model_order(now: dict[str, LearnerResult], jobs: dict, selection) -> tuple[list[str], list[str]]:
    """The learners whose model is fitted, split into those of the model the run is about to choose (the
    ensemble's members when it leads) and the others, in the order of ``jobs``.

    The choice is :func:`automil.tune.selection.choose` on the rows ``now``; the driver makes it again on
    the final rows, which differ only when a repeat fit fails. A learner whose stored result is reused
    keeps its logged model, unless it is a member of the ensemble (whose model is assembled from its
    members' refits).
    """
    members = [] if selection is None else selection.names
    chosen = choose(list(now.values()))
    if chosen is not None and chosen.learner == ENSEMBLE.name:
        first = members
    else:
        first = [chosen.learner] if chosen is not None and chosen.learner in jobs else []
    return first, [n for n in dict.fromkeys([*jobs, *members]) if n not in first]


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


def _collect(job, candidate: Candidate, kind, where, out, bags, nested: bool):
    """File one finished final-evaluation task (or its exception) under its learner (``job`` is ``None``
    for a learner whose stored result is reused: only its model is made again).

    What the budget left out is no error when the headline does not need it: a repeat is left out
    (``repeats`` counts the complete ones), a model is noted as missing.
    """
    if isinstance(out, OutOfTime) and kind == "repeat" and (nested or where[0] > 0):
        return
    if isinstance(out, OutOfTime) and kind == "model":
        if job is not None:
            job["evaluation"].notes.append(f"no model: its full-data fit was {out}")
        return
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
