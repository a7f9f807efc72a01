"""One study tuned trial by trial: ask, fit and score fold by fold in the worker, tell."""

from __future__ import annotations

import json
import time
import warnings

import numpy as np

from automil.evaluation import fold_scores, mean_std
from automil.folds import fold_splits
from automil.track.records import TrialAttr
from automil.tune.fits import fit_predict
from automil.tune.isolation import FitError, FitMemoryExceeded, FitTimeout, WorkerDied
from automil.tune.listener import Listener, StudyProgress
from automil.tune.plan import Plan, Unit, share_time
from automil.tune.processes import process_identity
from automil.tune.studies import sampler, study_name
from automil.tune.tracking import Guarded
from automil.tune.trial_states import counts_toward_budget, fail_stale_trials, records, trial_record

__all__ = ["tune_units"]


def tune_units(plan: Plan, bags, storage, worker, tracking: Guarded, listener: Listener, index: int):
    """Tune every study of the plan in order until its trial count or deadline is reached."""
    import optuna

    from automil import plugins

    n_classes = len(bags.classes)
    worker.set_data(bags)
    worker.wait_started()  # outside any trial: start-up is not a trial's cost
    for u, unit in enumerate(plan.units):
        share_time(plan, plan.units, u)
        spec = plugins.get_learner(unit.learner)
        name = study_name(plan.dataset, unit.learner, unit.split)
        study = optuna.load_study(study_name=name, storage=storage)
        if unit.split is None:
            main = study
        parent = tracking.study_run(study_name(plan.dataset, unit.learner), plan.dataset, spec,
                                    {"automil.protocol": plan.options.protocol}) if unit.split is None else None
        splits = fold_splits(plan.assignment, exclude=unit.split)
        study.sampler = sampler(plan, name, index, len(study.get_trials(deepcopy=False)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.pruner = optuna.pruners.WilcoxonPruner(p_threshold=0.1, n_startup_steps=2)
        fail_stale_trials(study)
        while True:
            trials = records(study)
            done = sum(counts_toward_budget(t) for t in trials)
            if plan.options.n_trials is not None and done >= plan.options.n_trials:
                break
            # Past its share a study stops, unless it has no trial yet: then it may start one until the
            # learner's hard stop (a nested figure needs a trial in every outer split).
            if time.time() >= (unit.deadline if done else unit.hard_stop):
                break
            if not done and spec.first_trial and not any(t.state == "WAITING" for t in trials):
                study.enqueue_trial(spec.first_trial)  # the learner's defaults first (again, if cut short)
            trial = trial_record(_run_trial(study, spec, unit, plan, bags, splits, n_classes, worker))
            if parent is not None:
                tracking.log_trial(parent, trial, name)
            listener.trial(_progress(plan, unit, records(study)))
        last_of_learner = u + 1 == len(plan.units) or plan.units[u + 1].learner != unit.learner
        if last_of_learner:
            listener.tuned(_progress(plan, unit, records(main)))


def _progress(plan: Plan, unit: Unit, trials) -> StudyProgress:
    options = plan.options
    return StudyProgress(unit.learner, unit.split, options.folds, options.n_trials, options.metric, trials)


def _run_trial(study, spec, unit: Unit, plan: Plan, bags, splits, n_classes, worker):
    """Ask for one trial, fit and score it fold by fold in the worker, and tell the outcome."""
    import optuna
    from optuna.trial import TrialState

    trial = study.ask()
    attrs = {TrialAttr.WORKER: process_identity(), TrialAttr.HEARTBEAT: time.time(),
             TrialAttr.N_FEATURES: bags.n_features, TrialAttr.N_CLASSES: n_classes, TrialAttr.LEARNER: spec.name,
             TrialAttr.PLUGIN: spec.plugin, TrialAttr.DATASET: plan.dataset, TrialAttr.SEED: plan.options.seed}
    for key, value in attrs.items():
        trial.set_user_attr(key, value)
    record = {TrialAttr.FOLD_ACCURACY: [], TrialAttr.FOLD_BALANCED_ACCURACY: [], TrialAttr.FIT_SECONDS: [],
              TrialAttr.PREDICT_SECONDS: [], TrialAttr.TIMED_OUT: False, TrialAttr.ONE_CLASS: False}
    state, value, limit = TrialState.COMPLETE, None, plan.options.fit_timeout
    try:
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
            limit = min(plan.options.fit_timeout, max(unit.hard_stop - time.time(), 0.01))
            out = worker.call(fit_predict, spec.name, params, train, test, plan.options.seed,
                              timeout=limit, heartbeat=lambda: trial.set_user_attr(TrialAttr.HEARTBEAT, time.time()))
            scores = fold_scores(bags.y[test], out["y_pred"])
            record[TrialAttr.FOLD_ACCURACY].append(scores["accuracy"])
            record[TrialAttr.FOLD_BALANCED_ACCURACY].append(scores["balanced_accuracy"])
            record[TrialAttr.FIT_SECONDS].append(out["fit_seconds"])
            record[TrialAttr.PREDICT_SECONDS].append(out["predict_seconds"])
            trial.report(scores[plan.options.metric], step=step)
            if scores["one_class"]:
                record[TrialAttr.ONE_CLASS] = True
                record[TrialAttr.ERROR] = f"predicted one class for every bag of fold {step}"
                raise optuna.TrialPruned(record[TrialAttr.ERROR])
            if fold < len(splits) - 1 and trial.should_prune():
                raise optuna.TrialPruned()
        value = float(np.mean(record[f"fold_{plan.options.metric}"]))
    except optuna.TrialPruned as pruned:
        state = TrialState.PRUNED
        if str(pruned) and TrialAttr.ERROR not in record:  # the search space's reason (the pruner gives none)
            record[TrialAttr.ERROR] = f"pruned: {pruned}"
    except FitTimeout as error:
        state = TrialState.FAIL
        if limit < plan.options.fit_timeout:  # cut by the run's budget: not the learner's fault
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
