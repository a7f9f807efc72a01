"""One trial of a study: ask, fit and score fold by fold in the worker, tell."""

from __future__ import annotations

import json
import signal
import time
import warnings

import numpy as np

from automil.ensemble import rounded
from automil.evaluation import fold_scores, mean_std
from automil.folds import fold_splits
from automil.records import TrialAttr
from automil.tune.fits import fit_predict
from automil.tune.isolation import FitError, FitMemoryExceeded, FitTimeout, WorkerDied
from automil.tune.plan import Plan
from automil.tune.processes import process_identity, signals_held
from automil.tune.studies import sampler
from automil.tune.trial_states import best_trial, counts_toward_budget, fail_stale_trials, trial_record

__all__ = ["run_trial", "configure_study"]


def configure_study(study, plan: Plan, index: int):
    """A study as this process tunes it: its own sampler stream, the fold-wise pruner (single objective
    only), no stale trials."""
    import optuna

    study.sampler = sampler(plan, study.study_name, index, len(study.get_trials(deepcopy=False)))
    if plan.options.multi_objective:  # Optuna prunes single-objective studies only (trial.report raises)
        study.pruner = optuna.pruners.NopPruner()
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.pruner = optuna.pruners.WilcoxonPruner(p_threshold=0.1, n_startup_steps=2)
    fail_stale_trials(study)


def run_trial(study, trials, spec, split: int | None, plan: Plan, bags, worker, deadline: float,
              share: float | None):
    """One trial of ``study``, whose ``trials`` (records) the caller has just read: the learner's defaults
    first when none counts yet. Returns the new trial's record.

    A fit still running ``share`` seconds after the trial started is stopped: the learner is too slow for
    its fair share of the budget (the trial says so, with its fits' times). A fit still running at the
    tuning ``deadline`` is stopped too: the run's budget ended.
    """
    if spec.first_trial and not any(counts_toward_budget(t) for t in trials) \
            and not any(t.state == "WAITING" for t in trials):
        study.enqueue_trial(spec.first_trial)  # the learner's defaults first (again, if cut short)
    splits = fold_splits(plan.assignment, exclude=split)
    best = best_trial(trials, plan.options.directions)
    frozen = _run_trial(study, spec, plan, bags, splits, len(bags.classes), worker, deadline, share,
                        None if best is None else best.value)
    return trial_record(frozen)


def _run_trial(study, spec, plan: Plan, bags, splits, n_classes, worker, deadline, share, best):
    """Ask for one trial, fit and score it fold by fold in the worker, and tell the outcome. A completed
    trial at least as good as ``best`` (the best value so far) keeps its out-of-fold scores, so the best
    trial always has them for ensemble selection while the storage does not grow with every trial."""
    import optuna
    from optuna.trial import TrialState

    started = time.time()
    # A share that ends before the deadline is the learner's own: passing it makes the learner too slow.
    # One that the deadline cuts is the run's budget running out, as for any other trial.
    fair_share = share is not None and started + share < deadline
    hard_stop = started + share if fair_share else deadline
    # Ctrl-C between ask() and the trial's owner would leave a RUNNING trial that a prompt rerun cannot tell
    # from a live one (and counts): the signal waits until the trial is named, then closes it as interrupted.
    with signals_held() as held:
        trial = study.ask()
        trial.set_user_attr(TrialAttr.WORKER, process_identity())
    attrs = {TrialAttr.HEARTBEAT: time.time(), TrialAttr.N_FEATURES: bags.n_features, TrialAttr.N_CLASSES: n_classes,
             TrialAttr.LEARNER: spec.name, TrialAttr.PLUGIN: spec.plugin, TrialAttr.DATASET: plan.dataset,
             TrialAttr.SEED: plan.options.seed}
    record = {TrialAttr.FOLD_ACCURACY: [], TrialAttr.FOLD_BALANCED_ACCURACY: [], TrialAttr.FIT_SECONDS: [],
              TrialAttr.PREDICT_SECONDS: [], TrialAttr.TIMED_OUT: False, TrialAttr.ONE_CLASS: False}
    state, value, limit = TrialState.COMPLETE, None, plan.options.fit_timeout
    multi = plan.options.multi_objective
    oof_scores = []
    try:
        for signum in held:
            signal.raise_signal(signum)
        for key, item in attrs.items():
            trial.set_user_attr(key, item)
        try:
            params = spec.search_space(trial)
            trial.set_user_attr(TrialAttr.ESTIMATOR_PARAMS, _jsonable(params, spec))
        except optuna.TrialPruned:
            raise
        except Exception as error:  # noqa: BLE001 - a plugin's search space is third-party code
            raise FitError(type(error).__name__, f"search_space of learner {spec.name!r} (plugin "
                                                 f"{spec.plugin!r}) failed: {error}") from error
        for fold, (train, test) in enumerate(splits):
            step = int(plan.assignment[test[0]])  # the fold's identity, stable across trials
            limit = min(plan.options.fit_timeout, max(hard_stop - time.time(), 0.01))
            out = worker.call(fit_predict, spec.name, params, train, test, plan.options.seed,
                              timeout=limit, heartbeat=lambda: trial.set_user_attr(TrialAttr.HEARTBEAT, time.time()))
            scores = fold_scores(bags.y[test], out["y_pred"])
            record[TrialAttr.FOLD_ACCURACY].append(scores["accuracy"])
            record[TrialAttr.FOLD_BALANCED_ACCURACY].append(scores["balanced_accuracy"])
            record[TrialAttr.FIT_SECONDS].append(out["fit_seconds"])
            record[TrialAttr.PREDICT_SECONDS].append(out["predict_seconds"])
            oof_scores.append(out["scores"])
            if not multi:
                trial.report(scores[plan.options.metric], step=step)
            if scores["one_class"]:  # pruned under every objective: never a result
                record[TrialAttr.ONE_CLASS] = True
                record[TrialAttr.ERROR] = f"predicted one class for every bag of fold {step}"
                raise optuna.TrialPruned(record[TrialAttr.ERROR])
            if not multi and fold < len(splits) - 1 and trial.should_prune():
                raise optuna.TrialPruned()
        value = objective_values(record, plan.options)
        if best is None or (value[0] if multi else value) >= best:
            record[TrialAttr.OOF_SCORES] = rounded(np.concatenate(oof_scores))
    except optuna.TrialPruned as pruned:
        state = TrialState.PRUNED
        if str(pruned) and TrialAttr.ERROR not in record:  # the search space's reason (the pruner gives none)
            record[TrialAttr.ERROR] = f"pruned: {pruned}"
    except FitTimeout as error:
        state = TrialState.FAIL
        if limit < plan.options.fit_timeout and fair_share:  # not counted: a larger budget tries again
            fits = record[TrialAttr.FIT_SECONDS]
            measured = (f"{len(fits)} of {len(splits)} fits done, {np.mean(fits):.1f} s each" if fits
                        else f"its first fit ran {limit:.1f} s without finishing")
            record.update({TrialAttr.INTERRUPTED: True, TrialAttr.TOO_SLOW: True,
                           TrialAttr.ERROR: f"too slow for the budget: its defaults did not finish within their "
                                            f"fair share of {share:.0f} s ({measured}); raise --timeout"})
        elif limit < plan.options.fit_timeout:  # cut by the run's budget: not the learner's fault
            record.update({TrialAttr.INTERRUPTED: True,
                           TrialAttr.ERROR: f"stopped after {limit:.0f} s by the --timeout budget"})
        else:
            record.update({TrialAttr.TIMED_OUT: True, TrialAttr.ERROR: f"{error} (--fit-timeout {limit:g} s)"})
    except FitMemoryExceeded as error:
        state = TrialState.FAIL
        record.update({TrialAttr.OUT_OF_MEMORY: True, TrialAttr.ERROR: str(error)})
    except (FitError, WorkerDied) as error:
        state = TrialState.FAIL
        record[TrialAttr.ERROR] = str(error)
    except BaseException:  # Ctrl-C or SIGTERM: the trial is not finished, so it does not count
        worker.kill()
        stopped = {**record, TrialAttr.INTERRUPTED: True, TrialAttr.ERROR: "interrupted"}
        _finish(study, trial, stopped, TrialState.FAIL, None)
        raise
    return _finish(study, trial, record, state, value)


def objective_values(record: dict, options) -> float | list[float]:
    """What Optuna is told: the mean over the folds of the metric, or of every objective (metrics and
    seconds per fit or prediction) for a multi-objective study."""
    # the per-fold lists: fold_accuracy, fold_balanced_accuracy, fit_seconds, predict_seconds
    means = [float(np.mean(record[name if name.endswith("_seconds") else f"fold_{name}"]))
             for name in (options.objectives if options.multi_objective else [options.metric])]
    return means if options.multi_objective else means[0]


def _finish(study, trial, record, state, value):
    for metric in ("accuracy", "balanced_accuracy"):
        mean, std = mean_std(record[f"fold_{metric}"])
        record[metric], record[f"{metric}_std"] = mean, std
    for key, item in record.items():
        trial.set_user_attr(key, item)
    return study.tell(trial, value if state.name == "COMPLETE" else None, state=state)


def _jsonable(params: dict, spec) -> dict:
    """The estimator parameters as JSON (stored with the trial, used to refit the best trial)."""
    try:
        return json.loads(json.dumps(params, default=lambda v: v.item() if hasattr(v, "item") else str(v)))
    except (TypeError, ValueError) as error:
        raise ValueError(f"search_space of learner {spec.name!r} (plugin {spec.plugin!r}) returned "
                         f"parameters that cannot be stored: {error}") from error
