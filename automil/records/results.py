"""A learner's result row, as the leaderboard prints it, ``automil tune --json`` writes it and a study
stores it: its parts (counts, tuning, nested and repeated figures, headline, costs, model), its status, and
what tracking could not log. The keys are the leaderboard's (``docs/reference/leaderboard-row.md``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum

from automil.endpoints import TASK_METRICS, TASKS
from automil.records.calibration import LEVELS, CalibrationFigures, level_key
from automil.records.protocol import Protocol
from automil.records.trials import TIMED_OUT

__all__ = ["Status", "LearnerResult", "TrialCounts", "Tuning", "Figure", "NestedFigure", "RepeatedFigure",
           "Headline", "Costs", "ModelRecord", "InstanceFigures", "OuterSplit", "Member", "ParetoPoint",
           "TrackingBacklog", "PROCEDURE", "OTHER_METRICS", "metric_task"]

PROCEDURE = "automil"  # the leaderboard row of the procedure itself: a learner chosen per outer split
# The metrics of the tasks beyond classification, in the order their keys follow the classification ones.
OTHER_METRICS = tuple(m for task in TASKS[1:] for m in TASK_METRICS[task])


class Status(StrEnum):
    """A learner's status on the leaderboard: a figure (``ok``, ``partial``) or why there is none."""

    OK = "ok"
    PARTIAL = "partial"
    TIMED_OUT = TIMED_OUT  # every trial timed out
    FAILED = "failed"  # every trial failed
    NO_RESULT = "no result"  # trials finished, none completed
    NO_TRIALS = "no trials"
    TOO_SLOW = "too slow"  # its defaults could not finish within their fair share of the budget
    SCREENED = "screened"  # left below the top rung of the ladder: a rung score only, never a figure
    SKIPPED = "skipped"  # the learner cannot run on the dataset

    @property
    def has_figure(self) -> bool:
        return self in (Status.OK, Status.PARTIAL)


# The keys of a skipped learner's row, in their order (it has no trials, so none of the others).
_SKIPPED_KEYS = ("dataset", "learner", "plugin", "status", "error", "protocol", "metric", "trials")
# only when there are out-of-fold predictions, several objectives, (members, tuning_gain_bound) on the
# ensemble's row, (choices) on the procedure's, or (interval, rung) under the hold-out protocol
_OPTIONAL_KEYS = ("classes", "confusion_matrix", "held_out_risk", "pareto_front", "members", "choices", "interval",
                  "rung", "tuning_gain_bound")
# The keys of a row in the order ``automil tune --json`` writes them (documented in docs/reference/leaderboard-row.md).
_ROW_KEYS = ("dataset", "learner", "plugin", "study", "protocol", "metric", "seed", "folds", "trials",
             "trials_complete", "trials_pruned", "trials_failed", "trials_timed_out", "tuning_score",
             "tuning_gain_bound", "best_trial", "best_params", "nested_accuracy", "nested_accuracy_std",
             "nested_balanced_accuracy", "nested_balanced_accuracy_std", "nested_roc_auc", "nested_roc_auc_std",
             "repeated_accuracy", "repeated_accuracy_std", "repeated_balanced_accuracy",
             "repeated_balanced_accuracy_std", "repeated_roc_auc", "repeated_roc_auc_std", "accuracy", "accuracy_std",
             "balanced_accuracy", "balanced_accuracy_std", "roc_auc", "roc_auc_std",
             *(f"{part}{metric}{spread}" for part in ("nested_", "repeated_", "")
               for metric in OTHER_METRICS for spread in ("", "_std")), "repeats", "headline",
             "fit_seconds", "budget_seconds", "one_class", "error", "trials_stopped", "classes", "confusion_matrix",
             "held_out_risk",
             "tuned_splits", "outer_splits", "pareto_front", "members", "choices", "model_uri", "selected",
             "registered_model", "status")
# The keys of a metric outside the row's task are left out of it (a classification row is as it always was).
_METRIC_KEYS = {metric: {f"{part}{metric}{spread}" for part in ("nested_", "repeated_", "")
                         for spread in ("", "_std")} for task in TASKS for metric in TASK_METRICS[task]}
# Field metadata: a part's prefix in the row's flat keys, and a field's own flat key where it is not the prefix
# and the field's name.
_PREFIX, _KEY = "automil.prefix", "automil.key"


def _records(cls, items):
    """``items`` as ``cls`` records: a row read back from JSON holds them as dicts (``None`` stays)."""
    return None if items is None else [i if i is None or isinstance(i, cls) else cls(**i) for i in items]


def _keyed(key: str, default=None):
    """A field of a part that the flat row names ``key``."""
    return field(default=default, metadata={_KEY: key})


def _part(cls, prefix: str = ""):
    """A :class:`LearnerResult` field holding one part of the row, its fields ``prefix + name`` in the flat row."""
    return field(default_factory=cls, metadata={_PREFIX: prefix})


@dataclass(frozen=True)
class TrialCounts:
    """A study's finished trials that count (``trials``: stale and interrupted ones excluded), by outcome
    (a timed-out trial is not also counted as failed), and those the ``--timeout`` budget stopped (not
    counted). ``None`` on a row with no trials of its own (the ensemble, the procedure)."""

    trials: int | None = _keyed("trials")
    complete: int | None = None
    pruned: int | None = None
    failed: int | None = None
    timed_out: int | None = None
    stopped: int | None = None


@dataclass(frozen=True)
class ParetoPoint:
    """A completed trial that no other trial of its multi-objective study beats on every objective: its
    number, parameters and value of each objective (by name, in the study's order; from the tuning folds)."""

    trial: int
    params: dict | None
    values: dict[str, float]


@dataclass(frozen=True)
class Tuning:
    """What tuning found in the main study: the best trial's value of the metric on the tuning folds
    (``score``, optimistic), its number and parameters, and with several objectives the Pareto front; on the
    ensemble's row, the lower bound of its gain over its best member alone (``gain_bound``: the gain less
    twice its paired standard error over the bags, :func:`~automil.evaluation.chance.gain_stderr`)."""

    score: float | None = _keyed("tuning_score")
    gain_bound: float | None = _keyed("tuning_gain_bound")
    best_trial: int | None = None
    best_params: dict | None = None
    pareto_front: list[ParetoPoint] | None = None

    def __post_init__(self):
        object.__setattr__(self, "pareto_front", _records(ParetoPoint, self.pareto_front))


@dataclass(frozen=True)
class Figure:
    """Every metric as mean and sd (over folds or repeats; an sd ``None`` rests on one, not measured)."""

    accuracy: float | None = None
    accuracy_std: float | None = None
    balanced_accuracy: float | None = None
    balanced_accuracy_std: float | None = None
    roc_auc: float | None = None
    roc_auc_std: float | None = None
    concordance: float | None = None
    concordance_std: float | None = None
    uno_concordance: float | None = None
    uno_concordance_std: float | None = None
    integrated_brier: float | None = None
    integrated_brier_std: float | None = None
    r2: float | None = None
    r2_std: float | None = None
    spearman: float | None = None
    spearman_std: float | None = None
    mae: float | None = None
    mae_std: float | None = None
    rmse: float | None = None
    rmse_std: float | None = None


@dataclass(frozen=True)
class Scores:
    """Every task's metrics on one set of bags (``None`` outside the task, or where undefined)."""

    accuracy: float | None = None
    balanced_accuracy: float | None = None
    roc_auc: float | None = None
    concordance: float | None = None
    uno_concordance: float | None = None
    integrated_brier: float | None = None
    r2: float | None = None
    spearman: float | None = None
    mae: float | None = None
    rmse: float | None = None


@dataclass(frozen=True)
class OuterSplit(Scores):
    """One outer split of a nested figure: the score its inner folds gave the parameters refitted there
    (``None``: none, so the procedure cannot choose by it), the refit's scores on the outer fold (its task's
    metrics; the others ``None``), each
    inner fold's score behind ``inner`` (their spread), for the ensemble, the learners its selection
    combined in the split and the lower bound of its inner score's gain over its best member alone
    (``gain_bound``), and the calibration of the refit's probabilities and prediction sets on the outer
    fold (``None``: not measured)."""

    inner: float | None = None
    inner_folds: list[float | None] | None = None
    members: list[str] | None = None
    calibration: CalibrationFigures | None = None
    gain_bound: float | None = None

    def __post_init__(self):
        if isinstance(self.calibration, dict):
            object.__setattr__(self, "calibration", CalibrationFigures(**self.calibration))


@dataclass(frozen=True)
class Member:
    """One learner of an ensemble and its weight in the ensemble's averaged probabilities."""

    learner: str
    weight: float


@dataclass(frozen=True)
class NestedFigure(Figure):
    """The nested figure, over the k outer folds; ``tuned_splits`` counts the outer splits with their own
    tuning, ``outer_splits`` holds each split's :class:`OuterSplit` (``None``: no refit there)."""

    tuned_splits: int | None = _keyed("tuned_splits")
    outer_splits: list[OuterSplit | None] | None = _keyed("outer_splits")

    def __post_init__(self):
        object.__setattr__(self, "outer_splits", _records(OuterSplit, self.outer_splits))


@dataclass(frozen=True)
class RepeatedFigure(Figure):
    """The best parameters re-evaluated by ``repeats`` x k-fold CV; the sd is over the repeats."""

    repeats: int | None = _keyed("repeats")


@dataclass(frozen=True)
class Headline(Figure):
    """The figure the leaderboard ranks by: the nested one (over the outer folds, or the held-out fold under
    ``--protocol holdout``), or under ``--protocol tuned`` the repeated one (``kind`` says which); whether a
    fold of it was predicted as one class, its out-of-fold ``confusion_matrix`` over ``classes`` (survival: the
    ``held_out_risk``, ``[bag, risk, cut]`` of every held-out bag), and the 95% ``interval`` of the metric."""

    kind: str | None = _keyed("headline")
    one_class: bool | None = None
    classes: list | None = None
    confusion_matrix: list | None = None
    held_out_risk: list | None = None
    interval: list | None = _keyed("interval")


@dataclass(frozen=True)
class Costs:
    """Mean seconds per fit (the repeated CV's, else the trials'), and the wall seconds of the run's budget
    the learner's trials and final fits took."""

    fit_seconds: float | None = None
    budget_seconds: float | None = None


@dataclass(frozen=True)
class ModelRecord:
    """The learner's logged model (``uri``), whether the run chose it, and its registry version."""

    uri: str | None = _keyed("model_uri")
    selected: bool = False
    registered: str | None = _keyed("registered_model")


@dataclass(frozen=True)
class InstanceFigures:
    """How well a learner finds the positive instances, on data with instance labels: mean and sd over the
    outer folds of the nested refits (``docs/reference/leaderboard-row.md``). ``None`` where the learner gives
    no such output (no instance scores: no AUC; no witness: no precision) or no fold had a figure. A row holds them as
    its flat keys ``instance_auc``, ``instance_auc_std``, ``witness_precision``, ``witness_precision_std``."""

    instance_auc: float | None = None
    instance_auc_std: float | None = None
    witness_precision: float | None = None
    witness_precision_std: float | None = None


_INSTANCE_KEYS = tuple(f.name for f in fields(InstanceFigures))
_CALIBRATION_KEYS = tuple(f.name for f in fields(CalibrationFigures))
_DERIVED_KEYS = ("coverage_se", "worst_class_coverage")  # written beside the calibration figures, never read


@dataclass
class LearnerResult:
    """One learner's leaderboard row, read as a few named parts. :meth:`to_dict` gives the row as
    ``automil tune --json`` prints it and the study stores it: flat keys (documented in
    ``docs/reference/leaderboard-row.md``), in their documented order."""

    dataset: str | None = None
    learner: str | None = None
    plugin: str | None = None
    study: str | None = None
    protocol: Protocol | None = None
    metric: str | None = None
    seed: int | None = None
    folds: int | None = None
    counts: TrialCounts = _part(TrialCounts, "trials_")
    tuning: Tuning = _part(Tuning)
    nested: NestedFigure = _part(NestedFigure, "nested_")
    repeated: RepeatedFigure = _part(RepeatedFigure, "repeated_")
    headline: Headline = _part(Headline)
    costs: Costs = _part(Costs)
    error: str | None = None
    members: list[Member] | None = None  # the ensemble's row
    choices: list[str | None] | None = None  # the procedure's row: its choice on each outer split
    rung: str | None = None  # hold-out protocol: the ladder's rung it ended on ("1/16", "1/4", "all")
    model: ModelRecord = _part(ModelRecord)
    status: Status | None = None
    instance: InstanceFigures | None = None  # only on data with instance labels, for learners that find instances
    calibration: CalibrationFigures | None = None  # only with held-out bags (nested, hold-out) and scores of them

    def __post_init__(self):
        self.members = _records(Member, self.members)
        if isinstance(self.calibration, dict):
            self.calibration = CalibrationFigures(**self.calibration)
        if self.status is not None:
            self.status = Status(self.status)
        if self.protocol is not None:
            self.protocol = Protocol(self.protocol)

    def to_dict(self) -> dict:
        """The row as JSON-ready data: the keys of today's ``--json`` output and stored ``result``."""
        flat = _flat(self)
        for key in ("status", "protocol"):  # plain strings, as JSON holds them
            if flat[key] is not None:
                flat[key] = flat[key].value
        if self.status == Status.SKIPPED:
            return {key: flat[key] for key in _SKIPPED_KEYS}
        instance = flat.pop("instance") or {}  # its figures are keys of the row, and absent without them
        calibration = flat.pop("calibration") or {}  # the same, the coverage keys only with sets
        calibration = {key: value for key, value in calibration.items() if value not in (None, {})}
        if self.calibration is not None and self.calibration.coverage:  # beside each coverage, in the row's terms
            calibration |= {"coverage_se": {level_key(c): self.calibration.standard_error(c) for c in LEVELS},
                            "worst_class_coverage": {level_key(c): self.calibration.worst_class(c) for c in LEVELS}}
        row = {key: flat.pop(key) for key in _ROW_KEYS} | flat  # a key not in the order goes last
        row = {key: value for key, value in row.items() if value is not None or key not in _OPTIONAL_KEYS}
        others = self._other_metrics()
        row = {key: value for key, value in row.items() if not any(key in _METRIC_KEYS[m] for m in others)}
        if row.get("outer_splits"):
            row["outer_splits"] = [split if split is None else {k: v for k, v in split.items() if k not in others}
                                   for split in row["outer_splits"]]
        return row | instance | calibration

    @classmethod
    def from_dict(cls, row: dict) -> LearnerResult:
        """A row read back (a study's stored result); unknown keys are an error naming them."""
        known = set(_flat(cls())) - {"instance", "calibration"}
        unknown = sorted(set(row) - known - set(_INSTANCE_KEYS) - set(_CALIBRATION_KEYS) - set(_DERIVED_KEYS))
        if unknown:
            raise ValueError(f"result row has unknown keys {unknown}")
        values = {}
        for f in fields(cls):
            if _PREFIX in f.metadata:
                keys = _part_keys(f)
                values[f.name] = f.default_factory(**{name: row[key] for name, key in keys.items() if key in row})
            elif f.name in row:
                values[f.name] = row[f.name]
        instance = {key: row[key] for key in _INSTANCE_KEYS if key in row}
        calibration = {key: row[key] for key in _CALIBRATION_KEYS if key in row}
        return cls(**values, instance=InstanceFigures(**instance) if instance else None,
                   calibration=CalibrationFigures(**calibration) if calibration else None)

    @property
    def task(self) -> str:
        """The row's task (``automil.endpoints.TASKS``), told by its metric."""
        return metric_task(self.metric)

    def _other_metrics(self) -> tuple[str, ...]:
        """The metrics of the tasks other than the row's: the row has none of their keys."""
        return tuple(m for task in TASKS if task != self.task for m in TASK_METRICS[task])

    def metric_value(self) -> float | None:
        """The headline figure of the metric the study maximized."""
        return getattr(self.headline, self.metric or "balanced_accuracy")

    def metric_std(self) -> float | None:
        """The spread of :meth:`metric_value` (over the outer folds, or over the repeats)."""
        return getattr(self.headline, f"{self.metric or 'balanced_accuracy'}_std")


def metric_task(metric: str | None) -> str:
    """The task whose metric ``metric`` is (``automil.endpoints.TASK_METRICS``): classification without one."""
    return next((task for task in TASKS if metric in TASK_METRICS[task]), TASKS[0])


def _part_keys(part) -> dict[str, str]:
    """The flat keys of a part's fields (``part`` a field of :class:`LearnerResult`), by field name."""
    prefix = part.metadata[_PREFIX]
    return {f.name: f.metadata.get(_KEY, prefix + f.name) for f in fields(part.default_factory)}


def _flat(result: LearnerResult) -> dict:
    """Every field of ``result`` under its flat key, in field order, copied as :func:`dataclasses.asdict` copies."""
    plain = asdict(result)
    flat = {}
    for f in fields(result):
        if _PREFIX in f.metadata:
            flat |= {key: plain[f.name][name] for name, key in _part_keys(f).items()}
        else:
            flat[f.name] = plain[f.name]
    return flat


@dataclass(frozen=True)
class TrackingBacklog:
    """What tracking could not log because its server did not answer: how many ``records`` it keeps, in
    which ``path`` (a backlog file that ``automil track replay`` logs), for which ``tracking_uri`` (a password
    in it hidden), and the last ``reason`` the server gave."""

    records: int
    path: str
    tracking_uri: str
    reason: str
