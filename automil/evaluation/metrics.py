"""The figures a fit is judged by: a fold's ACC, BACC and ROC AUC, the metric of class probabilities and
their log-loss, the mean and spread over folds, and the 95% interval of a figure over the bags it scored."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

__all__ = ["METRICS", "LABELS", "FoldScores", "fold_scores", "one_class", "roc_auc", "score", "log_loss", "mean_std",
           "bootstrap_interval", "auc_stderr", "figure_interval"]

# The metrics every fold is scored with (each a field of FoldScores; --metric names one), and their labels.
METRICS = ("balanced_accuracy", "accuracy", "roc_auc")
LABELS = {"balanced_accuracy": "BACC", "accuracy": "ACC", "roc_auc": "AUC"}


@dataclass(frozen=True)
class FoldScores:
    """One fold's ACC, BACC and ROC AUC (a metric's name is its field's; ``roc_auc`` is ``None`` without bag
    scores or when the fold's bags hold one class), and whether every bag was given one class (``one_class``:
    a degenerate fit)."""

    accuracy: float
    balanced_accuracy: float
    one_class: bool = False
    roc_auc: float | None = None


def fold_scores(y_true, y_pred, scores=None, classes=None) -> FoldScores:
    """The :class:`FoldScores` of predictions ``y_pred`` of the labels ``y_true``, with the ROC AUC of the bag
    ``scores`` (:func:`roc_auc`) when given."""
    from sklearn.metrics import accuracy_score, balanced_accuracy_score

    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    return FoldScores(float(accuracy_score(y_true, y_pred)), float(balanced_accuracy_score(y_true, y_pred)),
                      one_class(y_true, y_pred), None if scores is None else roc_auc(y_true, scores, classes))


def one_class(y_true, y_pred) -> bool:
    """Whether predictions ``y_pred`` give every bag one class where the labels ``y_true`` hold several: a
    degenerate fit."""
    return bool(len(np.unique(y_pred)) == 1 and len(np.unique(y_true)) > 1)


def roc_auc(y_true, scores, classes) -> float | None:
    """ROC AUC of bag scores: for two classes of the second class's score (``scores`` of shape ``(n_bags,)``,
    or its column of ``(n_bags, 2)``); for more, the one-vs-rest macro average over the classes ``y_true``
    holds (scikit-learn's ``roc_auc_score(multi_class="ovr")`` when every class is there). ``classes`` are
    the sorted classes the columns stand for. ``None`` when ``y_true`` holds one class: no AUC is defined."""
    from sklearn.metrics import roc_auc_score

    y_true, scores, classes = np.asarray(y_true), np.asarray(scores, dtype=np.float64), np.asarray(classes)
    if len(np.unique(y_true)) < 2:
        return None
    if scores.ndim == 1 or len(classes) == 2:
        positive = scores if scores.ndim == 1 else scores[:, 1]
        return float(roc_auc_score(y_true == classes[1], positive))
    present = [k for k, c in enumerate(classes) if np.any(y_true == c)]
    return float(np.mean([roc_auc_score(y_true == classes[k], scores[:, k]) for k in present]))


def mean_std(values) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (``ddof=1``). One value has no standard deviation (``None``, not 0:
    a spread that was not measured must not read as no spread); no values have neither."""
    values = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if values.size == 0:
        return None, None
    return float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else None


def bootstrap_interval(matrix, metric: str, seed: int, resamples: int = 2000, level: float = 0.95) -> list[float]:
    """The percentile bootstrap interval of ``metric`` (``accuracy`` or ``balanced_accuracy``) over the bags
    a confusion ``matrix`` (true class by predicted) counts: resampling bags with replacement is resampling
    its cells, so the interval needs no fit. A resample without a bag of some class averages the recall over
    the classes it has (as scikit-learn does)."""
    counts = np.asarray(matrix, dtype=np.int64)
    k, n = counts.shape[0], int(counts.sum())
    draws = np.random.default_rng(seed).multinomial(n, counts.ravel() / n, size=resamples).reshape(-1, k, k)
    diagonal = np.einsum("bii->bi", draws)
    if metric == "accuracy":
        values = diagonal.sum(axis=1) / n
    else:
        totals = draws.sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            values = np.nanmean(np.where(totals > 0, diagonal / totals, np.nan), axis=1)
    tail = (1.0 - level) / 2.0
    return [float(v) for v in np.quantile(values, [tail, 1.0 - tail])]


def auc_stderr(auc: float, counts) -> float:
    """Hanley and McNeil's (1982) standard error of a ROC AUC ``auc`` over the bags it ranked (``counts``: how
    many of each class), the smallest class in the role of their abnormal cases, against the others. Why the
    smallest: an AUC is the same whichever class is called positive, and above 0.5 this is the larger of the
    two readings of their formula, the conservative one (two normal classes of 60 and 140 bags at AUC 0.76:
    7% above the spread of the AUC, the other reading 8% below)."""
    counts = np.asarray([c for c in counts if c > 0], dtype=float)
    a = min(max(float(auc), 0.0), 1.0)
    rare, rest = counts.min(), counts.sum() - counts.min()
    q_rare, q_rest = a / (2 - a), 2 * a * a / (1 + a)
    return float(np.sqrt((a * (1 - a) + (rare - 1) * (q_rare - a * a) + (rest - 1) * (q_rest - a * a))
                         / (rare * rest)))


def figure_interval(metric: str, value: float, matrix, seed: int, level: float = 0.95) -> list[float]:
    """The ``level`` interval of ``value``, a figure of ``metric``, over the bags a confusion ``matrix`` (true
    class by predicted) counts: for accuracy and balanced accuracy their bootstrap
    (:func:`bootstrap_interval`); for ROC AUC, which a matrix cannot give, ``value`` within the normal
    quantile times its standard error (:func:`auc_stderr`, from the bags of each class), kept in [0, 1]."""
    if metric != "roc_auc":
        return bootstrap_interval(matrix, metric, seed, level=level)
    margin = NormalDist().inv_cdf(0.5 + level / 2) * auc_stderr(value, np.asarray(matrix).sum(axis=1))
    return [max(value - margin, 0.0), min(value + margin, 1.0)]


def score(y_index, proba, metric: str) -> float:
    """``accuracy`` or ``balanced_accuracy`` of the argmax of ``proba`` against class indices ``y_index``, or
    its ``roc_auc`` (0 where none is defined)."""
    if metric == "roc_auc":
        return roc_auc(y_index, proba, np.arange(proba.shape[1])) or 0.0
    hit = np.argmax(proba, axis=1) == y_index
    if metric == "accuracy":
        return float(hit.mean())
    counts = np.bincount(y_index, minlength=proba.shape[1])
    present = counts > 0
    return float((np.bincount(y_index, weights=hit, minlength=proba.shape[1])[present] / counts[present]).mean())


def log_loss(y_index, proba) -> float:
    """The mean negative log-probability of the true classes ``y_index`` (probabilities clipped at 1e-12)."""
    return float(-np.log(np.clip(proba[np.arange(len(y_index)), y_index], 1e-12, None)).mean())
