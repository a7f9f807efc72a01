"""One fit, the unit of work a fit worker runs: a learner by name on bag indices of data it holds."""

from __future__ import annotations

import functools
import importlib
import os
from dataclasses import dataclass, field

import numpy as np

from automil.bags import Bags
from automil.endpoints import task_of
from automil.evaluation.instance_metrics import InstanceFold, instance_fold
from automil.evaluation.prediction import task_predictions
from automil.evaluation.standardized import Standardized, streams
from automil.streamed_bags import StreamedBags
from automil.tune.options import TuneOptions
from automil.tune.workers.isolation import FitWorker

__all__ = ["FitResult", "fit_worker", "fit_predict", "import_for", "load_learners"]


@dataclass
class FitResult:
    """What a fit worker answers for one fit: its seconds, and with test bags their predicted labels
    ``y_pred`` and scores (:func:`automil.evaluation.prediction.bag_scores`, what ensembles
    combine; a survival model's risks and survival curves, a regression model's values:
    :func:`~automil.evaluation.prediction.task_predictions`) and the seconds that took; the fitted ``model``
    when asked for, and the test bags' ``instance`` figures when asked for and the data and learner have them
    (made in the worker, so that the model never leaves it for them); ``time_limited``, the parameters under
    which a new fit trains as far as this one did when its time ran out first (an anytime learner's
    ``time_limited_params_``; empty when it ended by its own rules); ``train_risk``, when asked for, a survival
    model's median risk over its training bags."""

    fit_seconds: float
    predict_seconds: float = 0.0
    y_pred: np.ndarray | None = None
    scores: np.ndarray | None = None
    model: object = None
    instance: InstanceFold | None = None
    time_limited: dict = field(default_factory=dict)
    train_risk: float | None = None


def load_learners(_=None, learners: tuple[str, ...] | None = None):
    """Import every learner and the modules the run's ``learners`` declare (``LearnerSpec.imports``; every
    learner's when ``None``): a worker's preload, so imports never count against a fit's time limit."""
    from automil import plugins

    specs = plugins.learners()
    for name in specs if learners is None else learners:
        for module in specs[name].imports if name in specs else ():
            try:
                importlib.import_module(module)
            except ImportError:  # the learner's fit meets the same error and reports it as the trial's
                pass


def fit_predict(bags: Bags, learner: str, params: dict, train, test=None, seed=None, return_model=False,
                score_instances=False, median_risk=False):
    """Fit ``Standardized(learner(**params))`` on the ``train`` bags and predict the ``test`` bags: the learner's
    estimator for the task of the bags' labels (``LearnerSpec.build(task=...)``), and its predictions as
    :func:`~automil.evaluation.prediction.task_predictions` gives them.

    This is the unit of work a :class:`~automil.tune.workers.isolation.FitWorker` runs: its arguments are small
    (a learner name and bag indices into data the worker already holds). ``seed`` goes to the learner's
    ``random_state`` unless ``params`` sets it. Returns a :class:`FitResult`; its ``model`` with
    ``return_model``, its ``instance`` (:func:`automil.evaluation.instance_metrics.instance_fold`) with
    ``score_instances``; with ``median_risk`` a survival model's median risk over its training bags
    (``train_risk``: where the Kaplan-Meier curves of its test bags split them, with no test bag's help).

    Raises
    ------
    ValueError
        When the learner's predictions have the wrong shape or labels it was not trained on; the message
        names the learner's plugin.
    """
    import time

    from automil import plugins

    try:
        spec = plugins.get_learner(learner)
    except plugins.UnknownNameError as error:
        failures = "; ".join(f"{name}: {why}" for name, why in plugins.registry("learners").failures.items())
        where = f"; plugins that failed to load there: {failures}" if failures else ""
        raise ValueError(f"{error} (in the worker process{where})") from None
    task = task_of(bags.y)
    estimator = spec.build(task=task, **params)
    if seed is not None and "random_state" in estimator.get_params() and "random_state" not in params:
        estimator.set_params(random_state=seed)
    model = Standardized(estimator)
    start = time.perf_counter()
    model.fit_subset(bags, train)  # the fold's rows are gathered once, standardized a block at a time
    fit_seconds = time.perf_counter() - start
    y_pred, scores, instance, predict_seconds = None, None, None, 0.0
    if test is not None:
        # a learner that streams reads its test bags from the run's matrix as it reads its training bags
        testing = StreamedBags(bags, test) if streams(estimator) and not bags.is_sparse else bags.subset(test)
        start = time.perf_counter()
        try:
            y_pred, scores = task_predictions(model, testing, bags.y[np.asarray(train)], bags.y[np.asarray(test)])
        except ValueError as error:  # e.g. scores of the wrong shape or NaN (BagClassifier checks them)
            raise ValueError(f"learner {learner!r} of plugin {spec.plugin!r}: {error}") from None
        instance = instance_fold(model, testing) if score_instances and task == "classification" else None
        predict_seconds = time.perf_counter() - start
        if y_pred.shape != (testing.n_bags,):
            raise ValueError(f"learner {learner!r} of plugin {spec.plugin!r} predicted an array of shape "
                             f"{y_pred.shape} for {testing.n_bags} bags (expected ({testing.n_bags},))")
        unknown = np.setdiff1d(y_pred, np.unique(bags.y[np.asarray(train)])) if task == "classification" else ()
        if len(unknown):
            raise ValueError(f"learner {learner!r} of plugin {spec.plugin!r} predicted labels it was not "
                             f"trained on: {unknown[:5].tolist()}")
    limited = dict(getattr(model.estimator_, "time_limited_params_", None) or {})
    train_risk = None
    if median_risk and task == "survival":
        training = StreamedBags(bags, train) if streams(estimator) and not bags.is_sparse else bags.subset(train)
        train_risk = float(np.median(model.predict(training)))
    return FitResult(fit_seconds, predict_seconds, y_pred, scores, model if return_model else None, instance,
                     limited, train_risk)


def fit_worker(options: TuneOptions, spare: bool = True) -> FitWorker:
    """A tuning process's fit worker; after a first kill its spare makes the next replacement immediate.

    It starts with the plugins' learners imported, not the libraries they declare (``LearnerSpec.imports``):
    those come before its first fit of such a learner (:func:`import_for`), so a worker that fits none of
    them never carries torch (247 MB)."""
    threads = max(1, (os.cpu_count() or 1) // options.jobs)
    return FitWorker(threads=threads, memory_limit=options.fit_memory,
                     preload=functools.partial(load_learners, learners=()), spare=spare)


def import_for(worker: FitWorker, learners) -> None:
    """Have ``worker`` (of :func:`fit_worker`) import the libraries ``learners`` declare, before the clock of
    any of their fits starts, and every replacement of it preload them: a killed fit's worker is replaced
    by one that is ready for the same learner."""
    from automil import plugins

    specs = plugins.learners()
    declaring = {name for name in learners if name in specs and specs[name].imports}
    if not declaring:
        return
    preloaded = set(worker.preload.keywords["learners"])  # the functools.partial fit_worker made
    if not declaring <= preloaded:
        worker.preload = functools.partial(load_learners, learners=tuple(sorted(preloaded | declaring)))
    # the current process may have started before that (a spare): a module imported already costs nothing
    worker.call(load_learners, tuple(sorted(declaring)), timeout=worker.startup_timeout)
