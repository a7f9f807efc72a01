"""The budget and protocol of a tuning run: the options of ``automil tune``, their checks, and study files
(a grid of datasets x learners with options, declared in TOML for ``automil run``)."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from pathlib import Path

from automil.data.label_columns import LabelColumns
from automil.endpoints import DEFAULT_METRIC, OBJECTIVE_METRICS, TASKS, task_of
from automil.evaluation.folds import MIN_TEST_BAGS, MIN_TEST_CLASS_BAGS, fold_sizes, folds_for_size, small_folds
from automil.evaluation.folds_file import FoldFile
from automil.records.protocol import Protocol
from automil.tune.portfolio.members import SHIPPED as SHIPPED_PORTFOLIO

__all__ = ["TuneOptions", "Allocation", "default_jobs", "parse_size", "read_study_file", "Sampler", "METRICS",
           "OBJECTIVES", "HOLDOUT_CELLS", "HOLDOUT_FOLDS", "instance_values"]

DEFAULT_STORAGE = "journal:studies/automil.journal"
DEFAULT_FOLDS = 6  # the pdMISVM paper's protocol; fewer for a small set (automil.evaluation.folds.folds_for_size)
# What --metric may name: every task's metrics that a study maximizes (which of them a run takes depends on
# its labels' task: TuneOptions.for_data).
METRICS = tuple(metric for task in TASKS for metric in OBJECTIVE_METRICS[task])
# What --objective may name, with its direction: the metrics (mean over the folds) and the costs (mean
# seconds per fold of the trial's fits or predictions).
OBJECTIVES = {**dict.fromkeys(METRICS, "maximize"), "fit_seconds": "minimize", "predict_seconds": "minimize"}



class Sampler(StrEnum):
    """How a study proposes its next trial (``--sampler``)."""

    TPE = "tpe"  # Optuna's tree-structured Parzen estimator, seeded per study
    RANDOM = "random"  # independent draws from the search space


class Allocation(StrEnum):
    """Where the tuning time goes after every learner's defaults (``--allocation``)."""

    PROMISE = "promise"  # to the learners close to the best (AutoML)
    EQUAL = "equal"  # the same seconds to every learner with a score (a table with equal effort per learner)


# Instance values (stored values when sparse) from which --protocol auto holds one fold out instead of
# nesting: the size from which one fit takes more than seconds (every classic benchmark is below; a set
# of 10^5 instances of 64 features is above), where a dozen full-size fits a learner cost minutes. The same
# size from which the cost of a fit is worth measuring.
HOLDOUT_CELLS = 4_000_000
# The folds of the hold-out protocol under auto: a quarter of the bags held out, the rest tuned by 3-fold CV
# (FLAML's eval_method="auto" holds out from its size threshold too).
HOLDOUT_FOLDS = 4


class AutoMetric(str):
    """The metric automil chose (no ``--metric``, no ``--objective``): :meth:`TuneOptions.for_data` takes the
    default of the labels' task (``automil.endpoints.DEFAULT_METRIC``), where a metric the user gave is checked
    against that task."""


class AutoFolds(int):
    """A number of folds automil chose (no ``--folds``, no folds file): :meth:`TuneOptions.for_data` may lower
    it for a small set, where a number the user gave is kept."""


@dataclass
class TuneOptions:
    """The budget and protocol of a tuning run (the options of ``automil tune``).

    ``objectives`` (``--objective``, two or more) makes multi-objective studies; ``metric`` is then their
    first, and ``None`` means that first objective, else the default of the labels' task (balanced accuracy,
    Harrell's concordance, R^2: :meth:`for_data`). ``folds_file`` (a ``folds.json``)
    gives the folds and the repeats; ``folds`` is then ``None`` until :meth:`with_fold_file` takes the
    file's number (without a file ``None`` means 6). ``track`` and ``tracking_uri``
    are read by the command line, which opens the tracking store and hands
    ``tune`` a factory for it; the driver itself never opens one. ``labels`` and ``groups`` say how to read a
    slide feature folder (its labels CSV, and the column of every slide's group), ``columns`` how its table reads
    (:class:`~automil.data.label_columns.LabelColumns`: the task, ``--bag-by``, ``--covariates``). ``scratch`` is
    the directory of the run's one file of the instances (``None``: the temporary directory).
    """

    n_trials: int | None = 20
    timeout: float | None = 300.0
    fit_timeout: float = 1000.0
    folds: int | None = None  # None: DEFAULT_FOLDS, or as many as the folds file holds
    repeats: int = 10
    folds_file: str | None = None
    metric: str | None = None  # None: the first of ``objectives``, else the task's default (for_data)
    objectives: tuple[str, ...] = ()
    seed: int = 0
    jobs: int = field(default_factory=lambda: default_jobs())
    storage: str = DEFAULT_STORAGE
    sampler: Sampler = Sampler.TPE
    protocol: Protocol = Protocol.AUTO
    allocation: Allocation = Allocation.PROMISE
    warm_start: bool = True
    portfolio: str | None = SHIPPED_PORTFOLIO  # the portfolio's JSON: automil's own, a path, or None (none)
    fit_memory: int | None = None
    memory: int | None = None  # None: the machine's memory less a margin (automil.tune.schedule.memory)
    ensemble: bool = True
    track: bool = True
    tracking_uri: str | None = None
    labels: str | None = None  # a slide feature folder's labels CSV (automil.data.load_bags)
    groups: str | None = None  # its column of every bag's group; None: case_id when it has one
    columns: LabelColumns = LabelColumns()  # the task and how its labels table reads (--task ... --covariates)
    scratch: str | None = None  # where the run's file of the instances goes; None: the temporary directory

    def __post_init__(self):
        self.objectives = tuple(self.objectives or ())
        if isinstance(self.columns, dict):  # a study file's [options.columns] table
            self.columns = LabelColumns.from_dict(self.columns)
        if self.metric is None:
            self.metric = self.objectives[0] if self.objectives else AutoMetric(DEFAULT_METRIC[TASKS[0]])
        if self.folds is None and self.folds_file is None:
            self.folds = AutoFolds(DEFAULT_FOLDS)
        # a study file or a caller may give the names; check() names one that is neither
        for name, kind in (("protocol", Protocol), ("allocation", Allocation), ("sampler", Sampler)):
            if getattr(self, name) in tuple(kind):
                setattr(self, name, kind(getattr(self, name)))

    def with_fold_file(self, given: FoldFile) -> TuneOptions:
        """These options on the folds a file gives: its number of folds (a ``--folds`` that differs is an
        error naming both) and its repeats, at most ``--repeats`` of them."""
        if self.folds is not None and self.folds != given.n_folds:
            raise ValueError(f"{given.path} holds {given.n_folds} folds and --folds says {self.folds}: leave "
                             "--folds out to take the file's, or give another folds file")
        return replace(self, folds=given.n_folds, repeats=min(self.repeats, len(given.repeats)))

    @property
    def multi_objective(self) -> bool:
        """Two or more objectives: the studies search a Pareto front (``docs/tune.md``, "Accuracy
        against cost")."""
        return len(self.objectives) > 1

    @property
    def directions(self) -> tuple[str, ...]:
        """The Optuna directions of the studies: the metric's alone, or one per objective."""
        return tuple(OBJECTIVES[name] for name in self.objectives) if self.multi_objective else ("maximize",)

    @property
    def splits(self) -> list[int | None]:
        """The studies of every learner: ``None`` (all bags) first, then the outer splits of nested CV."""
        return [None] + (list(range(self.folds)) if self.protocol == Protocol.NESTED else [])

    @property
    def held_out(self) -> int | None:
        """The fold the main study never sees (the hold-out protocol's outer fold, 0), else ``None``."""
        return 0 if self.protocol == Protocol.HOLDOUT else None

    @property
    def outer_folds(self) -> list[int]:
        """The outer folds a learner's headline is scored on: every fold (nested), the held-out one
        (holdout), none (tuned)."""
        return {Protocol.NESTED: list(range(self.folds or 0)), Protocol.HOLDOUT: [0]}.get(self.protocol, [])

    def for_data(self, bags) -> TuneOptions:
        """These options with ``--protocol auto`` decided on ``bags``: ``holdout`` (on ``HOLDOUT_FOLDS`` folds,
        unless a folds file gives them) from ``HOLDOUT_CELLS`` instance values, else ``nested``; and folds
        automil chose lowered for a small set (:func:`~automil.evaluation.folds.folds_for_size`); the metric of the
        labels' task (:meth:`for_task`)."""
        options = self.for_task(task_of(bags.y))
        if options.protocol == Protocol.AUTO and instance_values(bags) < HOLDOUT_CELLS:
            options = replace(options, protocol=Protocol.NESTED)
        elif options.protocol == Protocol.AUTO:
            options = replace(options, protocol=Protocol.HOLDOUT,
                              folds=options.folds if options.folds_file else HOLDOUT_FOLDS)
        if isinstance(options.folds, AutoFolds):
            options = replace(options, folds=AutoFolds(folds_for_size(bags.y, options.folds, bags.groups)))
        return options

    def for_task(self, task: str) -> TuneOptions:
        """These options for labels of ``task``: the task's default metric where automil chose the metric; a
        ``--metric`` or ``--objective`` of another task is an error naming the task's."""
        if isinstance(self.metric, AutoMetric):
            return replace(self, metric=AutoMetric(DEFAULT_METRIC[task]))
        allowed = OBJECTIVE_METRICS[task]
        for name in (self.metric, *self.objectives):
            if name in METRICS and name not in allowed:
                flag = "--objective" if name in self.objectives else "--metric"
                raise ValueError(f"{flag} {name} is not a metric of {task} labels: give one of {', '.join(allowed)}")
        return self

    def folds_note(self, bags) -> str | None:
        """What the run's plan says of its folds on ``bags`` (``None``: nothing to say): that automil took
        fewer than its default, or that the folds the user gave leave test folds too small to score a fold by
        (kept as given); with what the test folds hold."""
        lowered = isinstance(self.folds, AutoFolds) and self.folds < DEFAULT_FOLDS
        if not lowered and not small_folds(bags.y, self.folds):
            return None
        sizes, where = fold_sizes(bags.y, self.folds), 'see docs/protocol.md, "Small sets"'
        if lowered:
            return f"{bags.n_bags} bags: {self.folds} folds instead of {DEFAULT_FOLDS}: {sizes}; {where}"
        given = "--folds-file" if self.folds_file else "--folds"
        return (f"{bags.n_bags} bags: {self.folds} folds (as {given} gives them) leave {sizes}: fewer than "
                f"{MIN_TEST_BAGS}, or {MIN_TEST_CLASS_BAGS} of a class, to score a fold by; the one-class guard "
                f"and the headline pool the folds; {where}")

    def check(self):
        """Raise ``ValueError`` naming the first bad option."""
        positive = {"--n-trials": self.n_trials, "--timeout": self.timeout, "--fit-timeout": self.fit_timeout,
                    "--repeats": self.repeats, "--jobs": self.jobs, "--fit-memory": self.fit_memory,
                    "--memory": self.memory}
        for name, value in positive.items():
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if self.n_trials is None and self.timeout is None:
            raise ValueError("give --n-trials or --timeout (or both): without either tuning never ends")
        folds = DEFAULT_FOLDS if self.folds is None else self.folds  # None: a folds file not read yet
        if folds < 2:
            raise ValueError(f"--folds must be at least 2, got {self.folds}")
        if Protocol(self.protocol).held_out and folds < 3:
            raise ValueError(f"--protocol {self.protocol} needs --folds 3 or more (an outer split is tuned with "
                             "the other folds)")
        self._check_objectives()
        self.columns.check()
        if self.portfolio not in (None, SHIPPED_PORTFOLIO) and not Path(self.portfolio).is_file():
            raise ValueError(f"--portfolio: no such file: {self.portfolio}")
        self._check_scratch()
        for name, value, allowed in (("--metric", self.metric, METRICS), ("--protocol", self.protocol, tuple(Protocol)),
                                     ("--sampler", self.sampler, tuple(Sampler)),
                                     ("--allocation", self.allocation, tuple(Allocation))):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")

    def _check_scratch(self):
        """A ``--scratch`` that is no directory, or one this process cannot write to, named before the data is
        read (the run's file is written there once the whole folder has been opened)."""
        if self.scratch is None:
            return
        if not Path(self.scratch).is_dir():
            raise ValueError(f"--scratch: no such directory: {self.scratch}")
        try:
            tempfile.TemporaryFile(dir=self.scratch).close()
        except OSError as error:
            raise ValueError(f"--scratch: cannot write to {self.scratch} ({error.strerror or error})") from None

    def _check_objectives(self):
        for name in self.objectives:
            if name not in OBJECTIVES:
                raise ValueError(f"--objective must be one of {', '.join(OBJECTIVES)}, got {name!r}")
        if len(set(self.objectives)) < len(self.objectives):
            raise ValueError(f"--objective names an objective twice: {', '.join(self.objectives)}")
        if self.objectives and self.objectives[0] not in METRICS:
            raise ValueError(f"the first --objective is the one the best model is chosen by, so it must be a "
                             f"metric ({', '.join(METRICS)}), got {self.objectives[0]!r}")
        if self.objectives and self.objectives[0] != self.metric:
            raise ValueError(f"--metric {self.metric} and the first --objective {self.objectives[0]} disagree: "
                             "give one of them (a single --objective is the same as --metric)")


def instance_values(bags) -> int:
    """The instance values a fit reads: the matrix's cells, or its stored values when sparse."""
    return int(bags.X.nnz) if bags.is_sparse else bags.n_instances * bags.n_features


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
        for key in ("fit_memory", "memory"):
            if isinstance(values.get(key), str):
                values[key] = parse_size(values[key])
        for key in ("folds_file", "scratch"):  # a path in the file is relative to the file
            if values.get(key) is not None:
                values[key] = str(Path(path).parent / Path(values[key]).expanduser())
        options = TuneOptions(**{**values, **(overrides or {})})
        options.check()
        runs += [(dataset, learners, options) for dataset in datasets]
    return runs
