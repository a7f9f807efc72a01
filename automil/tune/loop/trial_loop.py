"""The tuning loop of a run and its unit, one trial: ask the budget (:mod:`automil.tune.schedule.budget`) where the
next trial goes, ask its study for parameters, fit and score them fold by fold in the worker, tell the
outcome; repeat until the tuning deadline or until every study is full."""

from __future__ import annotations

import json
import signal
import time
import warnings
from dataclasses import replace
from functools import partial

import numpy as np

from automil.endpoints import TASK_METRICS, evaluation_times
from automil.epochs import FitPruned
from automil.evaluation.folds import bag_sample
from automil.evaluation.metrics import fold_scores, mean_std
from automil.records import TrialAttr, TrialRecord, TrialState
from automil.records.trials import rounded
from automil.tune.backend.optuna_internals import owned_trials, study_storage, trial_id
from automil.tune.backend.optuna_storage import trial_heartbeat
from automil.tune.backend.optuna_trials import best_trial, counts_toward_budget, records, tell
from automil.tune.listener import Listener, StudyProgress
from automil.tune.loop.cost_probe import Estimate, TooSlow, check_estimate
from automil.tune.loop.trial_fits import TrialFits, beyond_share, cut_to_chance, timeout_attrs
from automil.tune.options import Allocation, instance_values
from automil.tune.portfolio.fit_costs import fit_cost
from automil.tune.schedule.budget import (
    final_reserve,
    learner_state,
    next_step,
    standing,
    trial_stop,
    tuning_deadline,
)
from automil.tune.schedule.ladder import run_ladder, rung_fraction
from automil.tune.schedule.probe import called_promising, cost_unknown, scored_rung, worth_probing
from automil.tune.studies.creation import configure_study, study_name
from automil.tune.studies.plan import Plan
from automil.tune.studies.priors import first_point, queue_later_points
from automil.tune.studies.pruner import EPOCH_STEP
from automil.tune.studies.warm_start import WARM_START_ATTR, warm_start, warm_start_note
from automil.tune.tracking import Recorder
from automil.tune.workers.fits import fit_predict, import_for
from automil.tune.workers.isolation import BUDGET_MARGIN, FitError, FitMemoryExceeded, FitTimeout, WorkerDied
from automil.tune.workers.processes import process_identity, signals_held, stop_after_ask_for_tests

__all__ = ["tune_studies", "run_trial", "objective_values"]

ALL_METRICS = tuple(metric for metrics in TASK_METRICS.values() for metric in metrics)


def tune_studies(plan: Plan, bags, storage, worker, recorder: Recorder, listener: Listener, index: int):
    """Run trials where the budget policy sends them until it has none left or the tuning time is up;
    ``recorder`` hears of every learner tuned and every finished trial of its study on all bags.

    ``index`` numbers this process among the ``--jobs`` processes sharing the studies: they all follow
    the policy on the studies' shared state, so they agree on where the time goes.
    """
    import optuna

    from automil import plugins

    worker.set_data(bags)
    worker.wait_started()  # outside any trial: start-up is not a trial's cost
    owned_trials(storage, lambda: {TrialAttr.WORKER: process_identity()})
    studies = {learner: [optuna.load_study(study_name=study_name(plan.dataset, learner, split), storage=storage)
                         for split in plan.options.splits] for learner in plan.learners}
    configured, warmed, queued = set(), set(), set()
    while True:
        now = time.time()
        trials = {learner: [records(s) for s in studies[learner]] for learner in plan.learners}
        states = [learner_state(learner, trials[learner], plan.options.metric, plan.start, now,
                                plan.options.directions, plan.chance, plan.predicted_seconds.get(learner))
                  for learner in plan.learners]
        # the final evaluation's share grows as the learners' costs become known
        deadline = tuning_deadline(plan, final_reserve(states, plan.options.folds, plan.options.jobs,
                                                       plan.options.protocol, plan.validation is not None,
                                                       results=len(plan.learners) + 1))
        if deadline is not None and now >= deadline:
            break
        left = None if deadline is None else deadline - now
        step = next_step(states, plan.options.n_trials, left, plan.options.jobs,
                         equal=plan.options.allocation == Allocation.EQUAL, ladder=run_ladder(plan.options.protocol),
                         prior=plan.prior, anytime=plan.anytime)
        listener.standing(standing(states, plan, None if step is None else step.learner, now, deadline))
        if step is None:
            break
        study = studies[step.learner][step.study]
        if (step.learner, step.study) not in configured:
            configure_study(study, plan, index)
            configured.add((step.learner, step.study))
        spec = plugins.get_learner(step.learner)
        recorder.learner_started(spec)
        if step.learner in plan.prior and (step.learner, step.study) not in queued:
            if queue_later_points(study, spec, plan.portfolio):
                queued.add((step.learner, step.study))
        if plan.options.warm_start and (step.learner, step.study) not in warmed:
            if warm_start(study, step.learner, plan.dataset, storage):
                warmed.add((step.learner, step.study))
        split = plan.options.splits[step.study]
        trial = run_trial(study, trials[step.learner][step.study], spec, split, plan, bags, worker,
                          np.inf if deadline is None else deadline, step.time_limit, step.fraction, step.estimate)
        if split is None and step.fraction is None:
            recorder.trial_done(spec, trial, study.study_name)
    if plan.options.warm_start and index == 0:  # the main process tells; the helpers' listeners are silent
        _announce_warm_starts(studies, listener)
    for learner in plan.learners:
        options = plan.options
        listener.tuned(StudyProgress(learner, None, options.folds, options.n_trials, options.metric,
                                     records(studies[learner][0])))


def _announce_warm_starts(studies: dict, listener: Listener):
    """One line per learner about its warm start, read from the studies, so that a decision another
    ``--jobs`` process made is told too (its own listener is silent); a learner's studies share a source."""
    for learner, learner_studies in studies.items():
        notes = (warm_start_note(learner, study.user_attrs.get(WARM_START_ATTR)) for study in learner_studies)
        note = next((note for note in notes if note is not None), None)
        if note is not None:
            listener.message(note)


def run_trial(study, trials: list[TrialRecord], spec, split: int | None, plan: Plan, bags, worker,
              deadline: float, share: float | None, fraction: float | None = None,
              estimate: float | None = None) -> TrialRecord:
    """One trial of ``study``, whose ``trials`` (records) the caller has just read: the learner's defaults
    first when none counts yet. Returns the new trial's record.

    A first trial at the defaults whose ``estimate`` (the policy's, :attr:`Step.estimate`: from the
    learner's rungs, else its shipped fit cost) is far past its ``share`` is reported too slow before any fit
    (:func:`~automil.tune.loop.cost_probe.check_estimate`).

    With a ``fraction`` it is a trial on a rung of the ladder: every fold's model is fitted on that share of
    its training bags (stratified, whole bags) and scored on all its test bags; the trial is stored failed
    with its ``rung`` and never counts, so its score only schedules (no pruner hears it, no best is it).

    A fit still running ``share`` seconds after the trial started is stopped: the learner is too slow for
    its fair share of the budget (the trial says so, with its fits' times); on all the bags, so is a trial
    whose fits so far say that the others cannot end within it, and one they say ends a little after it
    may run on to the estimate's error bound (:func:`beyond_share`), and so is a first trial on all the bags
    whose fits, half of them or more (any, for a learner not called promising), ran out of their time and
    scored at chance (:func:`cut_to_chance`). A fit still running at the tuning ``deadline`` is stopped too: the
    run's budget ended. A completed trial at least as good as the best so far keeps its out-of-fold scores,
    so the best trial always has them for ensemble selection while the storage does not grow with every
    trial.
    """
    import optuna

    first = first_point(spec, plan.portfolio)
    if first and not any(counts_toward_budget(t) for t in trials) \
            and not any(t.state is TrialState.WAITING for t in trials):
        study.enqueue_trial(first)  # the portfolio's point or the learner's defaults first (again, if cut short)
    best = best_trial(trials, plan.options.directions)
    folds = plan.trial_folds(plan.options.held_out if split is None else split)
    if fraction is not None:
        folds = replace(folds, fits=tuple((bag_sample(bags.y, train, rung_fraction(fraction, len(train)),
                                                      plan.options.seed), test) for train, test in folds.fits))
    # a killed worker's replacement starts and imports the learner's libraries before this trial's clock
    worker.wait_started()
    import_for(worker, (spec.name,))
    started = time.time()
    hard_stop, fair_share = trial_stop(started, share, deadline)
    own_share = share if fair_share and fraction is None else None  # a defaults trial's on all the bags
    fits = TrialFits(folds, plan.options.fit_timeout, plan.metrics, rung=fraction, share=own_share, started=started,
                     stop=hard_stop,
                     first_result=fraction is None and best is None,  # one bought at chance is none
                     promising=called_promising(spec.name, trials, plan.prior))
    blind = share is not None and cost_unknown(spec.name, trials, fraction, run_ladder(plan.options.protocol),
                                               plan.prior)
    probe = blind and not spec.anytime and worth_probing(instance_values(bags), share)
    first = share is not None and fraction is None and estimate is not None \
        and not any(counts_toward_budget(t) for t in trials)
    trial, held = _ask(study)
    with trial_heartbeat(study_storage(study), trial_id(trial)):
        state, value = TrialState.COMPLETE, None
        try:
            for signum in held:
                signal.raise_signal(signum)
            _describe(trial, spec, plan, bags)
            params = _parameters(trial, spec)
            if blind or first:
                predicted = _first_estimate(spec, trials, estimate) if first and trial.params == spec.first_trial \
                    else None  # an estimate of the defaults only
                fits.allow(check_estimate(spec, params, plan, bags, worker, share, fits.folds.fits,
                                          left=deadline - time.time(), predicted=predicted, probe=probe,
                                          promising=fits.promising), deadline)
            value = _score_folds(trial, spec, params, plan, bags, worker, fits, deadline)
            if fraction is not None:  # a rung's score schedules only: never a study's value
                state, value = TrialState.FAIL, None
            elif plan.classification and (
                    best is None or (value[0] if plan.options.multi_objective else value) >= best.value):
                fits.attrs[TrialAttr.OOF_SCORES] = rounded(np.concatenate(fits.oof_scores))  # for the ensemble
        except optuna.TrialPruned as pruned:
            state = TrialState.PRUNED
            if str(pruned) and TrialAttr.ERROR not in fits.attrs:  # the search space's reason (the pruner gives none)
                fits.attrs[TrialAttr.ERROR] = f"pruned: {pruned}"
        except TooSlow as estimate:
            state, seconds = TrialState.FAIL, None if estimate.seconds is None else round(estimate.seconds, 1)
            fits.attrs.update({TrialAttr.INTERRUPTED: True, TrialAttr.TOO_SLOW: True,
                               TrialAttr.ESTIMATED_SECONDS: seconds,
                               TrialAttr.ERROR: str(estimate)})
        except FitTimeout as error:
            state = TrialState.FAIL
            fits.attrs.update(timeout_attrs(error, fits, plan, share if fair_share else None))
        except FitMemoryExceeded as error:
            state = TrialState.FAIL
            fits.attrs.update({TrialAttr.OUT_OF_MEMORY: True, TrialAttr.ERROR: str(error)})
        except (FitError, WorkerDied) as error:
            state = TrialState.FAIL
            fits.attrs[TrialAttr.ERROR] = str(error)
        except BaseException:  # Ctrl-C or SIGTERM: the trial is not finished, so it does not count
            worker.kill()
            stopped = {**fits.attrs, TrialAttr.INTERRUPTED: True, TrialAttr.ERROR: "interrupted"}
            _tell(study, trial, stopped, TrialState.FAIL, None)
            raise
        return _tell(study, trial, fits.attrs, state, value)


def _first_estimate(spec, trials: list[TrialRecord], seconds: float) -> Estimate:
    """The policy's estimate of the learner's defaults with what it comes from: its scored rungs, else its
    shipped fit cost."""
    if any(scored_rung(t) for t in trials):
        return Estimate(seconds, "measured on its rungs of the ladder")
    return Estimate(seconds, fit_cost(spec.name).describe())


def _ask(study):
    """A new trial of ``study``, named with this process, and the signals that came meanwhile.

    The storage writes the owner with the trial (:func:`~automil.tune.backend.optuna_internals.owned_trials`),
    so a process killed at any point leaves no RUNNING trial that a rerun cannot tell from a live one. The
    owner is written again after ``ask()``: two processes claiming one queued trial at once both name it
    before the claim, and the winner's name must be the last. Ctrl-C waits until the trial is named, then
    closes it as interrupted.
    """
    import optuna

    with warnings.catch_warnings():
        # fail_stale_trials is experimental, and Optuna warns that heartbeats are meant for study.optimize
        # (trial_heartbeat does that part here)
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", "Heartbeat of storage", UserWarning)
        optuna.storages.fail_stale_trials(study)  # an RDB storage's trials of dead processes: failed, retried
        with signals_held() as held:
            trial = study.ask()
            stop_after_ask_for_tests()
            trial.set_user_attr(TrialAttr.WORKER, process_identity())
    return trial, held


def _describe(trial, spec, plan: Plan, bags):
    """Store what the trial runs on: the task (the search space reads it), the learner, the data's shape, the
    seed; a first heartbeat."""
    attrs = {TrialAttr.HEARTBEAT: time.time(), TrialAttr.N_FEATURES: bags.n_features,
             TrialAttr.N_INSTANCES: bags.n_instances, TrialAttr.TASK: plan.task,
             **({TrialAttr.N_CLASSES: len(bags.classes)} if plan.classification else {}),
             TrialAttr.LEARNER: spec.name, TrialAttr.PLUGIN: spec.plugin,
             TrialAttr.DATASET: plan.dataset, TrialAttr.SEED: plan.options.seed}
    for key, item in attrs.items():
        trial.set_user_attr(key, item)


def _parameters(trial, spec) -> dict:
    """The learner's search space asked for this trial's parameters (stored with it as JSON)."""
    import optuna

    try:
        params = spec.search_space(trial)
        trial.set_user_attr(TrialAttr.ESTIMATOR_PARAMS, _jsonable(params, spec))
    except optuna.TrialPruned:
        raise
    except Exception as error:  # noqa: BLE001 - a plugin's search space is third-party code
        raise FitError(type(error).__name__, f"search_space of learner {spec.name!r} (plugin "
                                             f"{spec.plugin!r}) failed: {error}") from error
    return params


def _score_folds(trial, spec, params: dict, plan: Plan, bags, worker, fits: TrialFits,
                 deadline: float) -> float | list[float]:
    """Make the trial's fits of ``params`` one by one in the worker and score each fit's blocks (its fold, or
    the blocks of the inner hold-out), reporting each block to the pruner (single objective); the objective
    values. Raises ``optuna.TrialPruned`` when pruned or when the fits gave every bag one class (or the same
    risk or value), told where that can be told (:meth:`TrialFits.one_class`: all the bags they scored, or a
    fold large enough): a fold of five bags given one class says nothing of the model."""
    import optuna

    multi = plan.options.multi_objective
    heard = not multi and fits.rung is None  # the pruner hears trials on all bags only
    attrs = fits.attrs
    for k, ((train, test), blocks) in enumerate(zip(fits.folds.fits, fits.folds.fit_blocks(), strict=True)):
        # a worker killed in the trial (a probe's fit past its limit) is replaced on the trial's clock: its
        # start is not the fit's time, so the fit's limit is measured once it has started
        worker.wait_started()
        left = max(fits.stop - time.time(), 0.01)
        fits.limit = min(plan.options.fit_timeout, left)
        # an anytime learner ends each fit on all the bags in its part of the time left (automil.time_left),
        # less what its earlier fits ran past theirs; on a rung it is stopped as any learner is (a fit cut short
        # says nothing of the learning curve), and --fit-timeout stays a kill, the protocol's T/O
        budget = fits.time_for_fit(k, left)
        budget = budget if fits.rung is None and budget < plan.options.fit_timeout else None
        # the first fit's epoch reports, if the learner makes any, go to the pruner before any fold score
        on_epoch = None if not heard or k else partial(_epoch_pruned, trial)
        try:
            out = worker.call(fit_predict, spec.name, params, train, test, plan.options.seed, timeout=fits.limit,
                              heartbeat=lambda: trial.set_user_attr(TrialAttr.HEARTBEAT, time.time()),
                              on_epoch=on_epoch, budget=budget)
        except FitError as error:
            if error.error_type == FitPruned.__name__:
                raise optuna.TrialPruned() from None
            raise
        if out.time_limited:
            _time_limited(trial, attrs, out.time_limited)
            if budget is not None:
                fits.ran(budget * (1 - BUDGET_MARGIN), out.fit_seconds + out.predict_seconds)
        attrs[TrialAttr.FIT_SECONDS].append(out.fit_seconds)
        attrs[TrialAttr.PREDICT_SECONDS].append(out.predict_seconds)
        fits.oof_scores.append(out.scores)
        classes = bags.classes if plan.classification else None
        # the survival curves' times are the whole fit's: a block keeps those inside its own bags' range
        times = evaluation_times(bags.y[train], bags.y[test]) if plan.task == "survival" else None
        for step, where in blocks:  # the block's identity (its fold's, or its block's) is stable across trials
            scores = fold_scores(bags.y[test[where]], out.y_pred[where], out.scores[where], classes, bags.y[train],
                                 times)
            for metric in plan.metrics:
                attrs[TrialAttr.fold(metric)].append(getattr(scores, metric))
            if heard and getattr(scores, plan.options.metric) is not None:
                trial.report(getattr(scores, plan.options.metric), step=step)
        fits.predictions.append(out.y_pred)
        where = fits.one_class(bags.y, f"fold {blocks[0][0]}" if len(blocks) == 1 else "the inner hold-out")
        if where is not None:
            attrs[TrialAttr.ONE_CLASS] = True
            if fits.rung is None:  # pruned under every objective: never a result
                what = "one class" if plan.classification else "the same value"
                attrs[TrialAttr.ERROR] = f"predicted {what} for every bag of {where}"
                raise optuna.TrialPruned(attrs[TrialAttr.ERROR])
            # on a rung, chance is a point of the learning curve like any other: it only schedules
        if fits.first_result:
            cut_to_chance(fits, trial.user_attrs[TrialAttr.ESTIMATOR_PARAMS], plan, bags.y,
                          spec.estimator_for(plan.task))
        if heard and k < len(fits.folds.fits) - 1 and trial.should_prune():
            raise optuna.TrialPruned()
        beyond_share(fits, deadline)
    return objective_values(attrs, plan.options)


def _time_limited(trial, attrs: dict, limited: dict):
    """Store that a fit of the trial ended when its time ran out (:func:`automil.time_left`), and the
    parameters under which a new fit trains as far (the least over the trial's fits) in the trial's
    estimator parameters: what it scored is what the final evaluation refits."""
    so_far = attrs.get(TrialAttr.TIME_LIMITED, {})
    limited = {name: min(value, so_far.get(name, value)) for name, value in limited.items()}
    attrs[TrialAttr.TIME_LIMITED] = {**so_far, **limited}
    attrs[TrialAttr.ESTIMATOR_PARAMS] = {**trial.user_attrs[TrialAttr.ESTIMATOR_PARAMS], **limited}


def _epoch_pruned(trial, epoch: int, score: float) -> bool:
    """Report a fit's epoch to the trial; whether the pruner stops the fit."""
    trial.report(score, step=EPOCH_STEP + epoch)
    return trial.should_prune()


def objective_values(attrs: dict, options) -> float | list[float]:
    """What Optuna is told: the mean over the folds of the metric, or of every objective (metrics and
    seconds per fit or prediction) for a multi-objective study."""
    # the per-fold lists: fold_<metric> of the task's metrics, fit_seconds, predict_seconds; a fold's AUC is
    # None when its test bags hold one class, and the mean is over the folds that have one
    means = [mean_std(attrs[name if name.endswith("_seconds") else TrialAttr.fold(name)])[0]
             for name in (options.objectives if options.multi_objective else [options.metric])]
    means = [float("nan") if m is None else m for m in means]
    return means if options.multi_objective else means[0]


def _tell(study, trial, attrs: dict, state: TrialState, value) -> TrialRecord:
    """Store the trial's attributes with its fold means (of the metrics its fits scored), and finish it in
    ``state``."""
    for metric in (m for m in ALL_METRICS if TrialAttr.fold(m) in attrs):
        mean, std = mean_std(attrs.get(TrialAttr.fold(metric), []))
        attrs[TrialAttr(metric)], attrs[TrialAttr.std(metric)] = mean, std
    for key, item in attrs.items():
        trial.set_user_attr(key, item)
    return tell(study, trial, state, value)


def _jsonable(params: dict, spec) -> dict:
    """The estimator parameters as JSON (stored with the trial, used to refit the best trial)."""
    try:
        return json.loads(json.dumps(params, default=lambda v: v.item() if hasattr(v, "item") else str(v)))
    except (TypeError, ValueError) as error:
        raise ValueError(f"search_space of learner {spec.name!r} (plugin {spec.plugin!r}) returned "
                         f"parameters that cannot be stored: {error}") from error
