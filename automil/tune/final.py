"""The final evaluation: nested refits and repeated cross-validation of every learner's best parameters."""

from __future__ import annotations

import time

import numpy as np

from automil.tune.isolation import FitTimeout, OutOfTime, run_tasks
from automil.tune.leaderboard import result_row
from automil.tune.plan import Plan
from automil.tune.studies import study_name
from automil.tune.trial_states import best_trial
from automil.evaluation import fold_scores
from automil.folds import bag_folds, fold_splits, repeat_seeds
from automil.tune.fits import fit_predict, fit_worker
from automil.tune.tracking import track

__all__ = ["final_evaluation"]


def final_evaluation(plan: Plan, bags, storage, worker, tracker, progress) -> list[dict]:
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
    rows, jobs = {}, {}
    for learner in plan.learners:
        spec = plugins.get_learner(learner)
        main = optuna.load_study(study_name=study_name(plan.dataset, learner), storage=storage)
        subs = [optuna.load_study(study_name=study_name(plan.dataset, learner, i), storage=storage)
                for i in range(options.folds)] if options.protocol == "nested" else []
        best, outer_best = best_trial(main), [best_trial(s) for s in subs]
        key = {"trials": [len(s.get_trials(deepcopy=False)) for s in [main, *subs]],
               "best": [None if t is None else t.number for t in [best, *outer_best]],
               "repeats": options.repeats, "protocol": options.protocol}
        stored = main.user_attrs.get("result")
        if stored is not None and stored.get("key") == key:
            rows[learner] = stored["row"]
            _log_study(plan, tracker, progress, spec, main)  # what this worker could not log as it went
            progress.learner_done(stored["row"])
            continue
        jobs[learner] = {"spec": spec, "main": main, "best": best, "outer_best": outer_best, "key": key,
                         "nested": [None] * len(subs), "repeated": {}, "fit_seconds": [], "errors": [],
                         "model": None, "predictions": {}}
    tasks, owners = [], []
    seeds = repeat_seeds(options.seed, options.repeats)
    outer = fold_splits(plan.assignment)
    for learner, job in jobs.items():
        for i, trial in enumerate(job["outer_best"]):
            if trial is not None:
                train, test = outer[i]
                tasks.append((fit_predict, learner, trial.user_attrs["estimator_params"], train,
                              test, options.seed))
                owners.append((learner, "nested", (i, test)))
        if job["best"] is not None and tracker is not None:
            tasks.append((fit_predict, learner, job["best"].user_attrs["estimator_params"],
                          np.arange(bags.n_bags), None, options.seed, True))
            owners.append((learner, "model", None))
    try:
        for r, seed in enumerate(seeds):
            if r > 0 and time.time() >= plan.final_deadline:
                break
            splits = fold_splits(bag_folds(bags.y, options.folds, seed))
            for learner, job in jobs.items():
                if job["best"] is None:
                    continue
                params = job["best"].user_attrs["estimator_params"]
                for train, test in splits:
                    tasks.append((fit_predict, learner, params, train, test, options.seed))
                    owners.append((learner, "repeat", (r, test)))
            for index, out in run_tasks(workers, tasks, timeout=options.fit_timeout,
                                        budget=max(plan.final_deadline - time.time(), 0.0)):
                learner, kind, where = owners[index]
                _collect(jobs[learner], kind, where, out, bags)
            tasks, owners = [], []
    finally:
        for w in workers[1:]:
            w.close()
    for learner, job in jobs.items():
        row = result_row(plan, job)
        # one attribute, so that a worker never pairs one worker's row with another's key
        job["main"].set_user_attr("result", {"key": job["key"], "row": row})
        rows[learner] = row
        _log_study(plan, tracker, progress, job["spec"], job["main"], row, job["model"], bags)
        progress.learner_done(row)
    return [rows[learner] for learner in plan.learners]


def _log_study(plan: Plan, tracker, progress, spec, main, row=None, model=None, bags=None):
    """Log every finished trial of the study not logged yet (by any worker), then ``row``, if given, as
    its result."""
    parent = track(tracker, progress, "study_run", main.study_name, plan.dataset, spec,
                    {"automil.protocol": plan.options.protocol})
    if parent is None:
        return
    for trial in main.get_trials(deepcopy=False):
        if trial.state.is_finished():
            track(tracker, progress, "log_trial", parent, trial, main.study_name)
    if row is not None:
        track(tracker, progress, "log_result", parent, row, model, bags, main)
    else:
        track(tracker, progress, "end_study", parent)


def _collect(job, kind, where, out, bags):
    """File one finished final-evaluation task (or its exception) under its learner."""
    if isinstance(out, OutOfTime) and kind == "repeat" and where[0] > 0:
        return  # the budget ended this repeat: it is left out, and `repeats` counts the complete ones
    if isinstance(out, Exception):
        job["errors"].append(f"{kind} fit: {out}")
        job["timed_out"] = job.get("timed_out", False) or isinstance(out, FitTimeout)
    elif kind == "model":
        job["model"] = out["model"]
    else:
        index, test = where
        scores = fold_scores(bags.y[test], out["y_pred"])
        if kind == "nested" or index == 0:  # out-of-fold predictions for the confusion matrix
            job["predictions"].setdefault(kind, []).append((bags.y[test], out["y_pred"]))
        if kind == "nested":
            job["nested"][index] = scores
        else:
            job["repeated"].setdefault(index, []).append(scores)
            job["fit_seconds"].append(out["fit_seconds"])
