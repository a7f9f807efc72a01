"""What a run predicts: a class (classification), a time to an event under right censoring (survival) or a
number (regression). The label array says which: survival labels are scikit-survival's structured ``Surv``
layout (:data:`SURVIVAL_DTYPE`), regression labels a structured array of one field (:data:`REGRESSION_DTYPE`),
anything else is a class label. Why in the array: ``bags.y`` then carries its task through every subset, index
and pickle with no argument beside it, and scikit-survival's metrics take survival labels as they are."""

from __future__ import annotations

import numpy as np

__all__ = ["SURVIVAL_DTYPE", "REGRESSION_DTYPE", "TASKS", "TASK_METRICS", "OBJECTIVE_METRICS", "DEFAULT_METRIC",
           "LABELS", "LOWER_IS_BETTER", "LabelError", "task_of", "survival_labels", "regression_labels",
           "label_counts", "evaluation_times", "strata", "EVALUATION_POINTS"]

SURVIVAL_DTYPE = np.dtype([("event", "?"), ("time", "<f8")])
REGRESSION_DTYPE = np.dtype([("target", "<f8")])

TASKS = ("classification", "survival", "regression")
# The metrics every fold of a task is scored with (each a field of automil.evaluation.metrics.FoldScores).
TASK_METRICS = {"classification": ("balanced_accuracy", "accuracy", "roc_auc"),
                "survival": ("concordance", "uno_concordance", "integrated_brier"),
                "regression": ("r2", "spearman", "mae", "rmse")}
# What --metric may name: the higher-is-better metrics, each with a chance level the rule that never ships
# chance can test against (automil.evaluation.chance).
OBJECTIVE_METRICS = {"classification": TASK_METRICS["classification"],
                     "survival": ("concordance", "uno_concordance"),
                     "regression": ("r2", "spearman")}
DEFAULT_METRIC = {"classification": "balanced_accuracy", "survival": "concordance", "regression": "r2"}
LABELS = {"balanced_accuracy": "BACC", "accuracy": "ACC", "roc_auc": "AUC", "concordance": "C",
          "uno_concordance": "Uno C", "integrated_brier": "IBS", "r2": "R2", "spearman": "rho", "mae": "MAE",
          "rmse": "RMSE"}
LOWER_IS_BETTER = frozenset({"integrated_brier", "mae", "rmse"})

# The survival times a fold's integrated Brier score and a learner's survival curves are taken at: this many
# quantiles of the training event times, from the 10th to the 80th percentile (past it, few bags are still
# followed and the censoring weights blow up).
EVALUATION_POINTS = 15
EVALUATION_QUANTILES = (0.1, 0.8)
TIME_BINS = 3  # survival folds balance the terciles of time, within events and within censored bags


class LabelError(ValueError):
    """A bad label: ``position`` is the label's index in the array given, ``reason`` what is wrong with it,
    so that a reader of a labels table can name the file and line instead."""

    def __init__(self, position: int | None, reason: str):
        super().__init__(reason if position is None else f"label at position {position}: {reason}")
        self.position, self.reason = position, reason


def task_of(y) -> str:
    """The task of the labels ``y``: ``"survival"``, ``"regression"`` or ``"classification"``."""
    names = getattr(y, "dtype", np.dtype(object)).names
    if names == SURVIVAL_DTYPE.names:
        return "survival"
    if names == REGRESSION_DTYPE.names:
        return "regression"
    return "classification"


def survival_labels(time, event) -> np.ndarray:
    """Survival labels of observed ``time`` and ``event`` (1 or ``True``: the event was observed; 0: the bag
    was censored at ``time``). A :class:`LabelError` names the first label with a missing, infinite or
    negative time or an event other than 0/1, and a set with no event at all (nothing to learn a risk from)."""
    time, event = _numbers(time, "time"), _numbers(event, "event")
    if len(time) != len(event):
        raise LabelError(None, f"{len(time)} times but {len(event)} events")
    negative = np.flatnonzero(time < 0)
    if negative.size:
        raise LabelError(int(negative[0]), f"time {time[negative[0]]:g} is negative")
    binary = np.flatnonzero((event != 0) & (event != 1))
    if binary.size:
        raise LabelError(int(binary[0]), f"event {event[binary[0]]:g} is neither 0 (censored) nor 1 (observed)")
    if len(event) and not event.any():
        raise LabelError(None, f"no event among the {len(event)} labels: every one is censored")
    labels = np.empty(len(time), dtype=SURVIVAL_DTYPE)
    labels["event"], labels["time"] = event == 1, time
    return labels


def regression_labels(target) -> np.ndarray:
    """Regression labels of ``target``; a :class:`LabelError` names the first missing, infinite or non-numeric
    one."""
    labels = np.empty(len(target), dtype=REGRESSION_DTYPE)
    labels["target"] = _numbers(target, "target")
    return labels


def _numbers(values, what: str) -> np.ndarray:
    """``values`` as finite floats, else a :class:`LabelError` naming the first that is not."""
    values = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    try:
        numbers = values.astype(np.float64)
    except (TypeError, ValueError):
        numbers = None
    if numbers is None or not np.isfinite(numbers).all():
        for position, value in enumerate(values.ravel()):
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise LabelError(position, f"{what} {value!r} is not a number") from None
            if not np.isfinite(number):
                raise LabelError(position, f"{what} is {'missing' if np.isnan(number) else number}")
    return numbers


def label_counts(y) -> np.ndarray:
    """What the bags labelled ``y`` count, for a score's standard error (automil.evaluation.chance) and the
    size of the folds: the bags of each class (classification), the events and the censored bags (survival),
    the bags (regression)."""
    task = task_of(y)
    if task == "survival":
        events = int(np.count_nonzero(y["event"]))
        return np.array([events, len(y) - events])
    if task == "regression":
        return np.array([len(y)])
    return np.unique(np.asarray(y), return_counts=True)[1]


def evaluation_times(y_train, y_test) -> np.ndarray:
    """The times a survival fold is scored at: ``EVALUATION_POINTS`` quantiles (10th to 80th percentile) of
    the events' times in ``y_train`` (of every training time without one), kept strictly inside the range of
    the test bags that the training bags' follow-up covers (scikit-survival estimates the censoring weights
    from the training bags and scores only inside the test range), or, when fewer than two quantiles fall
    there, as many times evenly spaced strictly inside it. Empty where that range is a single time. The same
    labels always give the same times."""
    train_time = y_train["time"][y_train["event"]] if y_train["event"].any() else y_train["time"]
    followed = y_test["time"][y_test["time"] <= y_train["time"].max()]
    if followed.size == 0 or followed.min() == followed.max():
        return np.empty(0)
    low, high = followed.min(), followed.max()
    times = np.unique(np.quantile(train_time, np.linspace(*EVALUATION_QUANTILES, EVALUATION_POINTS)))
    inside = times[(times > low) & (times < high)]
    return inside if inside.size >= 2 else np.linspace(low, high, EVALUATION_POINTS + 2)[1:-1]


def strata(y, n_folds: int) -> np.ndarray:
    """What ``n_folds`` folds over the bags labelled ``y`` stratify on: the class (classification); the event
    and the tercile of time among the events and among the censored bags (survival: every fold then holds
    events, early and late ones), the censored bags pooled with the events where they are fewer than
    ``n_folds``; the quantile bin of the target, ``n_folds`` bins at most (regression). Every stratum of a
    survival or regression set holds at least ``n_folds`` bags (bins pooled where ties or a small set leave
    fewer), so that each fold can be given one."""
    task = task_of(y)
    if task == "classification":
        return np.asarray(y)
    if task == "regression":
        return _quantile_bins(y["target"], n_folds, n_folds)
    event = y["event"].astype(bool)
    both = min(np.count_nonzero(event), np.count_nonzero(~event)) >= n_folds
    groups = [event, ~event] if both else [np.ones(len(y), dtype=bool)]
    labels = np.zeros(len(y), dtype=np.int64)
    for k, members in enumerate(groups):
        labels[members] = k * TIME_BINS + _quantile_bins(y["time"][members], TIME_BINS, n_folds)
    return labels


def _quantile_bins(values, n_bins: int, least: int) -> np.ndarray:
    """The quantile bin (0, 1, ...) of each of ``values``: ``n_bins`` bins of equal size at most, tied values
    in one bin, and adjacent bins pooled until each holds ``least`` values (the set's whole, if it is fewer)."""
    from scipy.stats import rankdata

    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return np.zeros(0, dtype=np.int64)
    n_bins = max(min(n_bins, values.size // max(least, 1)), 1)
    bins = (rankdata(values, method="min").astype(np.int64) - 1) * n_bins // values.size
    found, counts = np.unique(bins, return_counts=True)
    pooled, current, filled = np.empty(len(found), dtype=np.int64), 0, 0
    for k, count in enumerate(counts):
        pooled[k], filled = current, filled + count
        if filled >= least:
            current, filled = current + 1, 0
    if 0 < filled and current > 0:  # a last bin short of ``least`` joins the one before it
        pooled[pooled == current] = current - 1
    return pooled[np.searchsorted(found, bins)]
