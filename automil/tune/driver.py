"""The Optuna driver: one persistent study per learner-dataset pair, every fit in a killable worker.

``tune(dataset, learners, options)`` tunes each learner on fixed, stored folds over bags, then scores the
best parameters honestly (nested cross-validation) and re-evaluates them with repeated cross-validation.
Studies live in a storage that several processes share (a journal file by default, any Optuna RDB URL
otherwise), so a rerun continues them and several ``automil tune`` processes cooperate on them.

The names of the study and trial user attributes are a contract with :mod:`automil.track`; they are
listed in ``docs/reference/study.md`` ("What a study stores"). The loop and the final evaluation tell what happened to a
:class:`~automil.tune.tracking.Recorder`; the driver hands them the one that records it on tracking.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable
from dataclasses import replace

from automil.endpoints import task_of
from automil.evaluation.chance import chance_level
from automil.evaluation.folds_file import RunFolds, read_fold_file
from automil.records import LearnerResult
from automil.tune.backend.optuna_storage import open_storage
from automil.tune.final.choice import Choice
from automil.tune.final.evaluation import final_evaluation
from automil.tune.final.first_model import (
    FIRST_MODEL,
    FirstModel,
    commit_first_model,
    commits_first,
    keeps,
    replaced_row,
    shipped_row,
    stays_note,
)
from automil.tune.final.leaderboard import procedure_row, rank, skipped_row
from automil.tune.listener import Listener, Silent
from automil.tune.loop.trial_loop import tune_studies
from automil.tune.options import METRICS, TuneOptions
from automil.tune.portfolio.fit_costs import fit_cost
from automil.tune.recording import TrackingRecorder
from automil.tune.schedule.memory import default_memory, over_budget
from automil.tune.schedule.probe import predicted_trial_seconds
from automil.tune.studies.creation import changed_data_note, prepare_studies
from automil.tune.studies.plan import Plan
from automil.tune.tracking import Tracking, open_tracking
from automil.tune.workers.fits import fit_worker
from automil.tune.workers.processes import die_with_parent, release_instances, share_instances
from automil.uris import shown_storage

__all__ = ["tune"]


def tune(dataset: str, learners=None, options: TuneOptions | None = None, listener: Listener | None = None,
         tracking: Callable[[], Tracking] | None = None) -> list[LearnerResult]:
    """Tune ``learners`` (default: every registered learner that fits the data) on ``dataset``.

    Returns the leaderboard: one :class:`~automil.records.LearnerResult` per learner, best first
    (``to_dict()`` gives the row whose keys ``docs/reference/leaderboard-row.md`` lists). ``listener`` (default
    silent) hears the progress. ``tracking`` makes the tracking every trial and result is recorded to (for example
    ``functools.partial(automil.track.Tracker, uri)``); it must pickle, since ``--jobs`` processes call it
    too. Without it nothing is tracked.
    """
    import optuna

    from automil.data.datasets import dataset_name, load_bags

    options = options or TuneOptions()
    given = None if options.folds_file is None else read_fold_file(options.folds_file)
    if given is not None:
        options = options.with_fold_file(given)
    options.check()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    listener = listener or Silent()
    start = time.time()
    worker = fit_worker(options)
    worker.start()  # it imports the learners while the data loads and the studies are prepared
    bags = None
    try:
        # every process of the run maps this one copy
        bags = share_instances(functools.partial(load_bags, dataset, labels=options.labels, groups=options.groups,
                                                 columns=options.columns), options.scratch, listener.message)
        if bags.y is None:
            raise ValueError(f"dataset {dataset!r} has no bag labels: nothing to tune for")
        # --protocol auto and the default folds decided by the data's size, the metric by its labels' task
        options, task = options.for_data(bags), task_of(bags.y)
        if (folds_note := options.folds_note(bags)) is not None:
            listener.message(folds_note)
        if task != "classification":
            listener.message(f"{task} labels: no calibration, prediction sets, ensemble or first model (they serve "
                             "classification only)")
        # --jobs processes fit at the same time: each fit has its share of the memory
        specs, skipped = _usable_learners(bags, learners, (options.memory or default_memory()) // options.jobs,
                                          task)
        storage = open_storage(options.storage)
        source, dataset = dataset, dataset_name(dataset, bags)  # a file by its content, not its path
        note = changed_data_note(storage, dataset, source)
        if note is not None:
            listener.message(note)
        folds = given.run_folds(dataset, bags, options.repeats) if given is not None else RunFolds.drawn(
            dataset, bags, options.folds, options.seed, options.repeats)
        tuning, validation = prepare_studies(storage, dataset, bags, specs, options, folds)
        plan = Plan(dataset, [s.name for s in specs], options, replace(folds, tuning=tuning), start,
                    _portfolio(bags, specs, options, task),
                    chance_level(options.metric, bags.y) if options.metric in METRICS else None, validation,
                    tuple(s.name for s in specs if s.anytime), task=task)
        plan = replace(plan, predicted_seconds=_predicted_seconds(specs, bags, plan))
        tracker = open_tracking(tracking, listener)
        recorder = TrackingRecorder(plan, tracker)
        given_note = "" if given is None else f" from {given.path}"
        listener.message(f"tuning {len(specs)} learner(s) on {dataset} ({bags.n_bags} bags, {options.folds} folds"
                         f"{given_note}, protocol {options.protocol}; studies in {shown_storage(options.storage)})")
        helpers, first = [], None
        try:
            with _sigterm_interrupts():
                if recorder.enabled and commits_first(plan, bags):  # before any trial, registered when it learned
                    first = commit_first_model(plan, bags, worker, recorder, listener)
                helpers = [_start_helper(plan, bags, index, tracking) for index in range(1, options.jobs)]
                tune_studies(plan, bags, storage, worker, recorder, listener, index=0)
                for helper in helpers:
                    helper.join()
                rows, choice = final_evaluation(plan, bags, storage, worker, recorder, listener)
        except BaseException:
            for helper in helpers:
                _interrupt(helper)
            raise
    finally:
        worker.close()
        release_instances(bags)
    # the registered first model is a candidate of the automil row's one outer split, as it is of the final choice
    shipped_first = [first.row] if first is not None and first.registered is not None else []
    procedure = procedure_row(rows + shipped_first, plan.inner_bags(bags.y), choice)  # none under the tuned protocol
    if procedure is not None:
        recorder.procedure_done(procedure, bags)
    split_choice = procedure.choices[0] if procedure is not None and procedure.choices else None
    shipped = _select(rows, choice, first, split_choice, recorder, listener)
    tracker.call(tracker.tracking.refresh_comparison, dataset, shipped)
    backlog = tracker.flush()
    if backlog is not None:
        listener.unlogged(backlog)
    if first is not None:
        rows.append(shipped if shipped is not None and shipped.learner == FIRST_MODEL.name
                    else first.row if shipped is None else replaced_row(first, shipped))
    rows += [skipped_row(dataset, spec, reason, options) for spec, reason in skipped]
    return [procedure] * (procedure is not None) + sorted(rows, key=rank)


def _select(rows: list[LearnerResult], choice: Choice, first: FirstModel | None, split_choice: str | None,
            recorder: TrackingRecorder, listener: Listener) -> LearnerResult | None:
    """Mark the row the run ships and register its logged model as the dataset's new model version, unless the
    first model the run registered stays (:func:`~automil.tune.final.first_model.keeps`: the ``automil`` row's
    ``split_choice`` is not the chosen row); the shipped row, or ``None`` when there is none (the choice says
    why)."""
    chosen = choice.row(rows)
    if keeps(first, chosen, split_choice):
        listener.message(f"the first model stays the registered one ({first.registered}): "
                         f"{stays_note(first, chosen)}")
        shipped = shipped_row(first, chosen)
        recorder.first_model_done(shipped)  # its row again, now the shipped one
        return shipped
    if chosen is None:
        listener.message(choice.reason or "no learner has a figure to choose a model by")
        return None
    registered = None if chosen.model.uri is None else recorder.register(chosen.model.uri)
    chosen.model = replace(chosen.model, selected=True, registered=registered)
    return chosen


def _portfolio(bags, specs, options: TuneOptions, task: str) -> tuple:
    """The portfolio's members for data like ``bags`` among the run's learners (none with ``--no-portfolio``, nor
    for a ``task`` other than classification: its points are classification's)."""
    if options.portfolio is None or task != "classification":
        return ()
    from automil.tune.portfolio.members import grouped, members_for
    from automil.tune.studies.meta_features import meta_features

    return members_for({**meta_features(bags).to_dict(), "grouped": grouped(bags)}, [s.name for s in specs],
                       options.portfolio)


def _predicted_seconds(specs, bags, plan: Plan) -> dict[str, float]:
    """Each learner's first trial on all the bags as its shipped fit cost predicts it, where it has one."""
    train = [bags.sizes[t] for t, _ in plan.trial_folds(plan.options.held_out).fits]
    costs = [(spec, fit_cost(spec.name)) for spec in specs]
    return {spec.name: predicted_trial_seconds(cost, spec.fit_growth, train, bags.n_features, spec.pair_bytes > 0)
            for spec, cost in costs if cost is not None}


def _usable_learners(bags, names, memory: int, task: str = "classification"):
    """The learners to tune (the ``names`` given, else every registered one) and those skipped, with why:
    learners that do not serve the labels' ``task`` (``LearnerSpec.tasks``), binary learners on multi-class
    bags, dense-only learners on sparse bags, learners whose fit on every bag is estimated above ``memory``
    bytes (:func:`~automil.tune.schedule.memory.over_budget`). Learners of another task, and those over the
    memory, are rows, not errors, named or not, while one learner is left."""
    from automil import plugins

    if names:
        specs = [plugins.get_learner(name) for name in dict.fromkeys(names)]
    else:
        specs = sorted(plugins.learners().values(), key=lambda s: s.name.lower())
        if not specs:
            raise ValueError("no learners are registered (see `automil learners`)")
    serving = [spec for spec in specs if task in spec.tasks]
    if not serving:
        raise ValueError(f"no learner serves {task} labels: "
                         f"{', '.join(spec.name for spec in specs)} serve{'s' * (len(specs) == 1)} "
                         f"{' and '.join(sorted({t for spec in specs for t in spec.tasks}))}")
    usable, skipped = [], []
    n_classes = len(bags.classes) if task == "classification" else 0
    for spec in serving:
        if n_classes > 2 and not spec.multiclass:
            skipped.append((spec, f"binary only; {bags.source or 'the dataset'} has {n_classes} classes"))
        elif bags.is_sparse and not spec.sparse:
            skipped.append((spec, "does not accept sparse instances"))
        else:
            usable.append(spec)
    if names and skipped:
        spec, reason = skipped[0]
        raise ValueError(f"learner {spec.name!r} cannot run on this dataset: {reason}")
    skipped = [(spec, f"does not serve {task}") for spec in specs if spec not in serving] + skipped
    too_large = [(spec, over_budget(spec, bags, memory)) for spec in usable]
    if all(reason is not None for _, reason in too_large):
        spec, reason = too_large[0]
        raise ValueError(f"no learner fits in the memory of this run: {spec.name}: {reason}")
    usable = [spec for spec, reason in too_large if reason is None]
    return usable, skipped + [(spec, reason) for spec, reason in too_large if reason is not None]



def _start_helper(plan: Plan, bags, index: int, tracking):
    import multiprocessing

    process = multiprocessing.get_context("spawn").Process(
        target=_helper_main, args=(plan, bags, index, os.getpid(), tracking), name=f"automil-tune-{index}")
    process.start()
    return process


def _helper_main(plan: Plan, bags, index: int, parent_pid: int, tracking):
    """A ``--jobs`` tuning process: the same plan as the main process, on the same storage."""
    import optuna

    die_with_parent()
    if os.getppid() != parent_pid:
        return
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    worker = fit_worker(plan.options)
    try:
        with _sigterm_interrupts():
            tune_studies(plan, bags, open_storage(plan.options.storage), worker,
                         TrackingRecorder(plan, open_tracking(tracking, Silent())), Silent(), index)
    except KeyboardInterrupt:
        pass
    finally:
        worker.close()


@contextlib.contextmanager
def _sigterm_interrupts():
    """Within the block SIGTERM acts as Ctrl-C: the running trial is recorded as interrupted."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(process):
    import signal

    if process.is_alive():
        os.kill(process.pid, signal.SIGINT)
        process.join(5.0)
    if process.is_alive():
        process.kill()
        process.join()
