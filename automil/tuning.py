"""The Optuna driver: one persistent study per learner-dataset pair, every fit in a killable worker.

``tune(dataset, learners, options)`` tunes each learner on fixed, stored folds over bags, then scores the
best parameters honestly (nested cross-validation) and re-evaluates them with repeated cross-validation.
Studies live in a storage that several processes share (a journal file by default, any Optuna RDB URL
otherwise), so a rerun continues them and several ``automil tune`` processes cooperate on them.

The names of the study and trial user attributes are a contract with :mod:`automil.tracking`; they are
listed in ``docs/tune.md`` ("What a study stores").
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
import warnings
import zlib
from dataclasses import dataclass, field, fields, replace

import numpy as np

from automil.isolation import (FitError, FitMemoryExceeded, FitTimeout, FitWorker, OutOfTime, WorkerDied,
                               process_identity, run_tasks)
from automil.leaderboard import rank, result_row, skipped_row
from automil.progress import Silent
from automil.storage import DEFAULT_STORAGE, open_storage, shown_storage
from automil.trial_states import best_trial, counts_toward_budget, fail_stale_trials

__all__ = ["TuneOptions", "tune", "study_name", "read_study_file"]

SAMPLERS = ("tpe", "random")
METRICS = ("balanced_accuracy", "accuracy")
PROTOCOLS = ("nested", "tuned")
# Share of --timeout spent tuning; the rest goes to the final evaluation (nested refits, repeated CV).
TUNING_SHARE = 0.75


@dataclass
class TuneOptions:
    """The budget and protocol of a tuning run (the options of ``automil tune``)."""

    n_trials: int | None = 20
    timeout: float | None = 300.0
    fit_timeout: float = 1000.0
    folds: int = 6
    repeats: int = 10
    metric: str = "balanced_accuracy"
    seed: int = 0
    jobs: int = field(default_factory=lambda: default_jobs())
    storage: str = DEFAULT_STORAGE
    sampler: str = "tpe"
    protocol: str = "nested"
    fit_memory: int | None = None
    track: bool = True
    tracking_uri: str | None = None

    def check(self):
        """Raise ``ValueError`` naming the first bad option."""
        positive = {"--n-trials": self.n_trials, "--timeout": self.timeout, "--fit-timeout": self.fit_timeout,
                    "--repeats": self.repeats, "--jobs": self.jobs, "--fit-memory": self.fit_memory}
        for name, value in positive.items():
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if self.n_trials is None and self.timeout is None:
            raise ValueError("give --n-trials or --timeout (or both): without either tuning never ends")
        if self.folds < 2:
            raise ValueError(f"--folds must be at least 2, got {self.folds}")
        if self.protocol == "nested" and self.folds < 3:
            raise ValueError("--protocol nested needs --folds 3 or more (each outer split is tuned with "
                             "the other folds)")
        for name, value, allowed in (("--metric", self.metric, METRICS), ("--protocol", self.protocol, PROTOCOLS),
                                     ("--sampler", self.sampler, SAMPLERS)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


def default_jobs() -> int:
    """Tuning processes by default: one per available core, at most 4 (fits are mostly single-threaded)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


def parse_size(text: str) -> int:
    """Bytes from ``4G``, ``512M``, ``1.5GiB`` or a plain number of bytes."""
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    value = str(text).strip().lower().removesuffix("b").removesuffix("i")
    try:
        return int(float(value[:-1]) * units[value[-1]]) if value[-1:] in units else int(float(value))
    except ValueError:
        raise ValueError(f"not a memory size: {text!r} (expected e.g. 4G or 512M)") from None


def study_name(dataset: str, learner: str, split: int | None = None) -> str:
    """``DATASET/LEARNER``, or ``DATASET/LEARNER/outer-i`` for the tuning of nested outer split ``i``."""
    return f"{dataset}/{learner}" if split is None else f"{dataset}/{learner}/outer-{split}"


def read_study_file(path, overrides: dict | None = None) -> list[tuple[str, list | None, TuneOptions]]:
    """The studies a TOML file declares: ``(dataset, learners, options)`` for every dataset.

    ``[options]`` holds defaults for every ``[[study]]``; a study names ``datasets`` (or one
    ``dataset``), optionally ``learners``, and may override any option. ``overrides`` (the command line)
    win over the file. Unknown keys are errors naming the file and the key.
    """
    import tomllib

    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as error:
        raise ValueError(f"cannot read study file {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from None
    known = {f.name for f in fields(TuneOptions)}
    for key in set(data) - {"options", "study", "description"}:
        raise ValueError(f"{path}: unknown top-level key {key!r} (expected [options] and [[study]])")
    base = data.get("options", {})
    if set(base) - known:
        raise ValueError(f"{path}: unknown option {sorted(set(base) - known)[0]!r} in [options]; known: "
                         f"{', '.join(sorted(known))}")
    studies = data.get("study") or []
    if not studies:
        raise ValueError(f"{path}: no [[study]] tables: nothing to run")
    runs = []
    for number, study in enumerate(studies, 1):
        study = dict(study)
        datasets = study.pop("datasets", None) or [study.pop("dataset", None)]
        study.pop("dataset", None)
        learners = study.pop("learners", None) or None
        if None in datasets:
            raise ValueError(f"{path}: study {number} names no dataset (add dataset = \"NAME\")")
        unknown = set(study) - known - {"name"}
        if unknown:
            raise ValueError(f"{path}: study {number}: unknown key {sorted(unknown)[0]!r}")
        study.pop("name", None)
        values = {**base, **study}
        for key in ("n_trials", "timeout"):
            if isinstance(values.get(key), str) and values[key].lower() == "none":
                values[key] = None
        if isinstance(values.get("fit_memory"), str):
            values["fit_memory"] = parse_size(values["fit_memory"])
        options = replace(TuneOptions(), **{**values, **(overrides or {})})
        options.check()
        runs += [(dataset, learners, options) for dataset in datasets]
    return runs


# ---- the studies of one run ----------------------------------------------------------------------------
@dataclass
class _Unit:
    """One study to tune: a learner on all bags (``split=None``) or on one outer split's training bags.

    ``deadline``: no trial starts after it; ``hard_stop``: a fit still running then is stopped (its
    trial is not counted). Both are set when a process starts the unit (see ``_share_time``).
    """

    learner: str
    split: int | None
    deadline: float = math.inf
    learner_deadline: float = math.inf
    hard_stop: float = math.inf


@dataclass
class _Plan:
    """Everything a tuning process needs; picklable so that ``--jobs`` processes get the same plan."""

    dataset: str
    learners: list[str]
    options: TuneOptions
    assignment: np.ndarray
    start: float  # time.time() when the run began
    units: list[_Unit] = field(default_factory=list)

    @property
    def tuning_deadline(self) -> float | None:
        t = self.options.timeout
        return None if t is None else self.start + TUNING_SHARE * t

    @property
    def final_deadline(self) -> float:
        t = self.options.timeout
        return math.inf if t is None else self.start + t


def tune(dataset: str, learners=None, options: TuneOptions | None = None, progress=None) -> list[dict]:
    """Tune ``learners`` (default: every registered learner that fits the data) on ``dataset``.

    Returns the leaderboard: one result row (a dict, keys in ``docs/tune.md``) per learner, best first.
    ``progress`` (an :class:`automil.progress.Progress`, default silent) receives the status lines.
    """
    import optuna

    from automil.data import load_bags

    options = options or TuneOptions()
    options.check()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    progress = progress or Silent()
    start = time.time()
    worker = _fit_worker(options)
    worker.start()  # it imports the learners while the data loads and the studies are prepared
    try:
        bags = load_bags(dataset)
        if bags.y is None:
            raise ValueError(f"dataset {dataset!r} has no bag labels: nothing to tune for")
        specs, skipped = _choose_learners(bags, learners)
        storage = open_storage(options.storage)
        assignment = _prepare_studies(storage, dataset, bags, specs, options)
        plan = _Plan(dataset, [s.name for s in specs], options, assignment, start)
        plan.units = _schedule(plan)
        tracker = _tracker(options)
        progress(f"tuning {len(specs)} learner(s) on {dataset} ({bags.n_bags} bags, {options.folds} folds, "
                 f"protocol {options.protocol}; studies in {shown_storage(options.storage)})")
        helpers = [_start_helper(plan, bags, index) for index in range(1, options.jobs)]
        try:
            with _sigterm_interrupts():
                _tune_units(plan, bags, storage, worker, tracker, progress, index=0)
                for helper in helpers:
                    helper.join()
                rows = _final_evaluation(plan, bags, storage, worker, tracker, progress)
        except BaseException:
            for helper in helpers:
                _interrupt(helper)
            raise
    finally:
        worker.close()
    rows += [skipped_row(dataset, spec, reason, options) for spec, reason in skipped]
    return sorted(rows, key=rank)


def _choose_learners(bags, names):
    from automil import plugins

    if names:
        specs = [plugins.get_learner(name) for name in dict.fromkeys(names)]
    else:
        specs = sorted(plugins.learners().values(), key=lambda s: s.name.lower())
        if not specs:
            raise ValueError("no learners are registered (see `automil learners`)")
    usable, skipped = [], []
    n_classes = len(bags.classes)
    for spec in specs:
        if n_classes > 2 and not spec.multiclass:
            skipped.append((spec, f"binary only; {bags.source or 'the dataset'} has {n_classes} classes"))
        elif bags.is_sparse and not spec.sparse:
            skipped.append((spec, "does not accept sparse instances"))
        else:
            usable.append(spec)
    if names and skipped:
        spec, reason = skipped[0]
        raise ValueError(f"learner {spec.name!r} cannot run on this dataset: {reason}")
    return usable, skipped


def _labels_digest(bags) -> str:
    import hashlib

    return hashlib.sha256("\x1f".join(map(str, bags.y)).encode()).hexdigest()[:16]


def _prepare_studies(storage, dataset, bags, specs, options) -> np.ndarray:
    """Create or load every study of the run; the fold assignment is stored once and reused.

    The assignment of the first study that has one wins; a study made with other folds, another seed or
    another metric is an error (its scores could not be compared), never silently overwritten.
    """
    import optuna

    from automil import evaluation

    fresh = evaluation.bag_folds(bags.y, options.folds, options.seed)
    folds = {"n_splits": options.folds, "seed": options.seed}
    labels = _labels_digest(bags)
    assignment = None
    studies = []
    for spec in specs:
        splits = [None] + (list(range(options.folds)) if options.protocol == "nested" else [])
        for split in splits:
            name = study_name(dataset, spec.name, split)
            study = optuna.create_study(storage=storage, study_name=name, direction="maximize",
                                        load_if_exists=True)
            attrs = study.user_attrs
            if "fold_assignment" in attrs:
                stored = {k: attrs["folds"][k] for k in ("n_splits", "seed")}
                if stored != folds or attrs.get("metric") != options.metric:
                    raise ValueError(
                        f"study {name!r} in {shown_storage(options.storage)} was made with {stored['n_splits']} "
                        f"folds, seed {stored['seed']} and metric {attrs.get('metric')}; this run asks for "
                        f"{options.folds} folds, seed {options.seed} and metric {options.metric}. Use the same options "
                        "to continue it, or another --storage for a new study")
                if attrs.get("labels_digest") != labels:
                    raise ValueError(f"study {name!r} was made on different bag labels than {dataset!r} has "
                                     "now (the data changed); use another --storage for a new study")
                if assignment is None:
                    assignment = np.asarray(attrs["fold_assignment"], dtype=np.int64)
            studies.append((study, spec, split))
    if assignment is None:
        assignment = fresh
    record = {"dataset": dataset, "metric": options.metric, "seed": options.seed,
              "folds": {**folds, "digest": evaluation.fold_digest(assignment)}, "labels_digest": labels}
    stored_assignment = assignment.tolist()
    for study, spec, split in studies:
        attrs = study.user_attrs
        protocol = options.protocol if split is None else "nested"
        # The fold assignment goes last: other workers opening the study at the same moment check it only
        # once it is there, so by then every attribute they compare against is written.
        wanted = {**record, "learner": spec.name, "plugin": spec.plugin, "split": split, "protocol": protocol,
                  "fold_assignment": stored_assignment}
        for key, value in wanted.items():
            if attrs.get(key) != value:
                study.set_user_attr(key, value)
    return assignment


def _schedule(plan: _Plan) -> list[_Unit]:
    """The studies in tuning order: per learner, all bags first (its best parameters give the repeated CV
    and the logged model), then the outer splits of nested cross-validation."""
    splits = list(range(plan.options.folds)) if plan.options.protocol == "nested" else []
    return [_Unit(learner, split) for learner in plan.learners for split in [None, *splits]]


def _share_time(plan: _Plan, units: list[_Unit], u: int):
    """Set the deadlines of study ``u`` from the tuning time left when it starts.

    Each learner gets an equal share of the time left when its first study starts, and each of its
    studies an equal share of what is left of that: time a study or a learner leaves unused goes to the
    ones after it. No trial starts after a study's deadline; a fit still running half a learner's share
    past the learner's deadline is stopped (so a slow learner cannot eat the others' budget, and fits are
    killed at most once per learner for the budget's sake).
    """
    if plan.tuning_deadline is None:
        return
    now = time.time()
    unit = units[u]
    if u == 0 or units[u - 1].learner != unit.learner:
        learners_left = len({v.learner for v in units[u:]})
        share = max(plan.tuning_deadline - now, 0.0) / learners_left
        unit.learner_deadline = now + share
        unit.hard_stop = min(now + 1.5 * share, plan.tuning_deadline)
    else:
        unit.learner_deadline, unit.hard_stop = units[u - 1].learner_deadline, units[u - 1].hard_stop
    studies_left = sum(v.learner == unit.learner for v in units[u:])
    unit.deadline = now + max(unit.learner_deadline - now, 0.0) / studies_left


# ---- trials ------------------------------------------------------------------------------------------
def _sampler(plan: _Plan, name: str, index: int, n_existing: int):
    import optuna

    # Seeded by the run's seed and by what is already in the study, so a resumed or parallel process
    # does not replay the random start-up proposals of another one.
    seed = int(np.random.SeedSequence([plan.options.seed, index, n_existing, zlib.crc32(name.encode())])
               .generate_state(1)[0])
    if plan.options.sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed)


def _tune_units(plan: _Plan, bags, storage, worker, tracker, progress, index: int):
    """Tune every study of the plan in order until its trial count or deadline is reached."""
    import optuna
    from optuna.trial import TrialState

    from automil import evaluation, plugins

    n_classes = len(bags.classes)
    worker.set_data(bags)
    worker.wait_started()  # outside any trial: start-up is not a trial's cost
    for u, unit in enumerate(plan.units):
        _share_time(plan, plan.units, u)
        spec = plugins.get_learner(unit.learner)
        name = study_name(plan.dataset, unit.learner, unit.split)
        study = optuna.load_study(study_name=name, storage=storage)
        main = study if unit.split is None else main
        parent = _track(tracker, progress, "study_run", study_name(plan.dataset, unit.learner), plan.dataset,
                        spec, {"automil.protocol": plan.options.protocol}) if unit.split is None else None
        splits = evaluation.fold_splits(plan.assignment, exclude=unit.split)
        study.sampler = _sampler(plan, name, index, len(study.get_trials(deepcopy=False)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.pruner = optuna.pruners.WilcoxonPruner(p_threshold=0.1, n_startup_steps=2)
        fail_stale_trials(study)
        while True:
            trials = study.get_trials(deepcopy=False)
            done = sum(counts_toward_budget(t) for t in trials)
            if plan.options.n_trials is not None and done >= plan.options.n_trials:
                break
            # Past its share a study stops, unless it has no trial yet: then it may start one until the
            # learner's hard stop (a nested figure needs a trial in every outer split).
            if time.time() >= (unit.deadline if done else unit.hard_stop):
                break
            if not done and spec.first_trial and not any(t.state == TrialState.WAITING for t in trials):
                study.enqueue_trial(spec.first_trial)  # the learner's defaults first (again, if cut short)
            frozen = _run_trial(study, spec, unit, plan, bags, splits, n_classes, worker)
            if parent is not None:
                _track(tracker, progress, "log_trial", parent, frozen, name)
            progress.trial(unit, study, plan)
        last_of_learner = u + 1 == len(plan.units) or plan.units[u + 1].learner != unit.learner
        if last_of_learner:
            progress.tuned(unit, main, plan)


def _run_trial(study, spec, unit: _Unit, plan: _Plan, bags, splits, n_classes, worker):
    """Ask for one trial, fit and score it fold by fold in the worker, and tell the outcome."""
    import optuna
    from optuna.trial import TrialState

    from automil import evaluation

    trial = study.ask()
    attrs = {"worker": process_identity(), "heartbeat": time.time(), "n_features": bags.n_features,
             "n_classes": n_classes, "learner": spec.name, "plugin": spec.plugin, "dataset": plan.dataset,
             "seed": plan.options.seed}
    for key, value in attrs.items():
        trial.set_user_attr(key, value)
    record = {"fold_accuracy": [], "fold_balanced_accuracy": [], "fit_seconds": [], "predict_seconds": [],
              "timed_out": False, "one_class": False}
    state, value, limit = TrialState.COMPLETE, None, plan.options.fit_timeout
    try:
        try:
            params = spec.search_space(trial)
            trial.set_user_attr("estimator_params", _jsonable(params, spec))
        except optuna.TrialPruned:
            raise
        except Exception as error:  # noqa: BLE001 - a plugin's search space is third-party code
            raise FitError(type(error).__name__, f"search_space of learner {spec.name!r} (plugin "
                                                 f"{spec.plugin!r}) failed: {error}") from error
        for fold, (train, test) in enumerate(splits):
            step = int(plan.assignment[test[0]])  # the fold's identity, stable across trials
            limit = min(plan.options.fit_timeout, max(unit.hard_stop - time.time(), 0.01))
            out = worker.call(evaluation.fit_predict, spec.name, params, train, test, plan.options.seed,
                              timeout=limit, heartbeat=lambda: trial.set_user_attr("heartbeat", time.time()))
            scores = evaluation.fold_scores(bags.y[test], out["y_pred"])
            record["fold_accuracy"].append(scores["accuracy"])
            record["fold_balanced_accuracy"].append(scores["balanced_accuracy"])
            record["fit_seconds"].append(out["fit_seconds"])
            record["predict_seconds"].append(out["predict_seconds"])
            trial.report(scores[plan.options.metric], step=step)
            if scores["one_class"]:
                record["one_class"] = True
                record["error"] = f"predicted one class for every bag of fold {step}"
                raise optuna.TrialPruned(record["error"])
            if fold < len(splits) - 1 and trial.should_prune():
                raise optuna.TrialPruned()
        value = float(np.mean(record[f"fold_{plan.options.metric}"]))
    except optuna.TrialPruned as pruned:
        state = TrialState.PRUNED
        if str(pruned) and "error" not in record:  # the search space's reason (the pruner gives none)
            record["error"] = f"pruned: {pruned}"
    except FitTimeout as error:
        state = TrialState.FAIL
        if limit < plan.options.fit_timeout:  # cut by the run's budget: not the learner's fault
            record.update(interrupted=True, error=f"stopped after {limit:.0f} s by the --timeout budget")
        else:
            record.update(timed_out=True, error=f"{error} (--fit-timeout {limit:g} s)")
    except FitMemoryExceeded as error:
        state = TrialState.FAIL
        record.update(out_of_memory=True, error=str(error))
    except (FitError, WorkerDied) as error:
        state = TrialState.FAIL
        record["error"] = str(error)
    except BaseException:  # Ctrl-C or SIGTERM: the trial is not finished, so it does not count
        worker.kill()
        _finish(study, trial, {**record, "interrupted": True, "error": "interrupted"}, TrialState.FAIL, None)
        raise
    return _finish(study, trial, record, state, value)


def _finish(study, trial, record, state, value):
    from automil import evaluation

    for metric in ("accuracy", "balanced_accuracy"):
        mean, std = evaluation.mean_std(record[f"fold_{metric}"])
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


# ---- worker processes --------------------------------------------------------------------------------
def _fit_worker(options: TuneOptions, spare: bool = True) -> FitWorker:
    """A tuning process's fit worker; its spare makes the replacement of a killed fit immediate."""
    from automil import evaluation

    threads = max(1, (os.cpu_count() or 1) // options.jobs)
    return FitWorker(threads=threads, memory_limit=options.fit_memory, preload=evaluation.load_learners,
                     spare=spare)


def _start_helper(plan: _Plan, bags, index: int):
    import multiprocessing

    process = multiprocessing.get_context("spawn").Process(
        target=_helper_main, args=(plan, bags, index, os.getpid()), name=f"automil-tune-{index}")
    process.start()
    return process


def _helper_main(plan: _Plan, bags, index: int, parent_pid: int):
    """A ``--jobs`` tuning process: the same plan as the main process, on the same storage."""
    import optuna

    from automil.isolation import _die_with_parent

    _die_with_parent()
    if os.getppid() != parent_pid:
        return
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    worker = _fit_worker(plan.options)
    try:
        with _sigterm_interrupts():
            _tune_units(plan, bags, open_storage(plan.options.storage), worker,
                        _tracker(plan.options), Silent(), index)
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


# ---- tracking ----------------------------------------------------------------------------------------
def _tracker(options: TuneOptions):
    """The MLflow tracker; a store that cannot be opened stops the run before any tuning, since
    results that silently go untracked are lost to the UI and the report."""
    if not options.track:
        return None
    from automil.tracking import Tracker

    try:
        return Tracker(options.tracking_uri)
    except Exception as error:
        store = shown_storage(options.tracking_uri) if options.tracking_uri else "(default)"
        reason = str(error) if store in str(error) else f"cannot open the MLflow tracking store {store}: {error}"
        raise RuntimeError(f"{reason} (give a writable --tracking-uri, or --no-track to tune without tracking)"
                           ) from error


def _track(tracker, progress, method, *args):
    """Call the tracker; a failure is reported once and tuning goes on (a rerun logs what is missing)."""
    if tracker is None:
        return None
    try:
        return getattr(tracker, method)(*args)
    except Exception as error:  # noqa: BLE001
        progress(f"warning: MLflow {method} failed ({type(error).__name__}: {error}); tuning goes on and a "
                 "rerun logs what is missing")
        return None


# ---- the final evaluation ----------------------------------------------------------------------------
def _final_evaluation(plan: _Plan, bags, storage, worker, tracker, progress) -> list[dict]:
    """Nested refits and repeated CV of every learner's best parameters, run on ``--jobs`` workers.

    A learner whose stored result matches its studies (same best trials, trial count, repeats and
    protocol) is not evaluated again.
    """
    import optuna

    from automil import evaluation, plugins

    options = plan.options
    workers = [worker] + [_fit_worker(options, spare=False) for _ in range(options.jobs - 1)]
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
    seeds = evaluation.repeat_seeds(options.seed, options.repeats)
    outer = evaluation.fold_splits(plan.assignment)
    for learner, job in jobs.items():
        for i, trial in enumerate(job["outer_best"]):
            if trial is not None:
                train, test = outer[i]
                tasks.append((evaluation.fit_predict, learner, trial.user_attrs["estimator_params"], train,
                              test, options.seed))
                owners.append((learner, "nested", (i, test)))
        if job["best"] is not None and tracker is not None:
            tasks.append((evaluation.fit_predict, learner, job["best"].user_attrs["estimator_params"],
                          np.arange(bags.n_bags), None, options.seed, True))
            owners.append((learner, "model", None))
    try:
        for r, seed in enumerate(seeds):
            if r > 0 and time.time() >= plan.final_deadline:
                break
            splits = evaluation.fold_splits(evaluation.bag_folds(bags.y, options.folds, seed))
            for learner, job in jobs.items():
                if job["best"] is None:
                    continue
                params = job["best"].user_attrs["estimator_params"]
                for train, test in splits:
                    tasks.append((evaluation.fit_predict, learner, params, train, test, options.seed))
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


def _log_study(plan: _Plan, tracker, progress, spec, main, row=None, model=None, bags=None):
    """Log every finished trial of the study not logged yet (by any worker), then ``row``, if given, as
    its result."""
    parent = _track(tracker, progress, "study_run", main.study_name, plan.dataset, spec,
                    {"automil.protocol": plan.options.protocol})
    if parent is None:
        return
    for trial in main.get_trials(deepcopy=False):
        if trial.state.is_finished():
            _track(tracker, progress, "log_trial", parent, trial, main.study_name)
    if row is not None:
        _track(tracker, progress, "log_result", parent, row, model, bags, main)
    else:
        _track(tracker, progress, "end_study", parent)


def _collect(job, kind, where, out, bags):
    """File one finished final-evaluation task (or its exception) under its learner."""
    from automil import evaluation

    if isinstance(out, OutOfTime) and kind == "repeat" and where[0] > 0:
        return  # the budget ended this repeat: it is left out, and `repeats` counts the complete ones
    if isinstance(out, Exception):
        job["errors"].append(f"{kind} fit: {out}")
        job["timed_out"] = job.get("timed_out", False) or isinstance(out, FitTimeout)
    elif kind == "model":
        job["model"] = out["model"]
    else:
        index, test = where
        scores = evaluation.fold_scores(bags.y[test], out["y_pred"])
        if kind == "nested" or index == 0:  # out-of-fold predictions for the confusion matrix
            job["predictions"].setdefault(kind, []).append((bags.y[test], out["y_pred"]))
        if kind == "nested":
            job["nested"][index] = scores
        else:
            job["repeated"].setdefault(index, []).append(scores)
            job["fit_seconds"].append(out["fit_seconds"])
