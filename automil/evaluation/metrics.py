"""The figures a fit is judged by: a fold's ACC, BACC and ROC AUC (classification), Harrell's and Uno's
concordance and the integrated Brier score (survival), R^2, Spearman's rho, MAE and RMSE (regression); the
metric of class probabilities and their log-loss, the mean and spread over folds, and the 95% interval of a
figure over the bags it scored."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from automil.endpoints import LABELS, TASK_METRICS, evaluation_times, task_of
from automil.records.results import Scores

__all__ = ["METRICS", "LABELS", "FoldScores", "fold_scores", "task_metrics", "one_class", "roc_auc", "score",
           "log_loss", "mean_std", "bootstrap_interval", "auc_stderr", "figure_interval"]

# The metrics every classification fold is scored with (each a field of FoldScores; --metric names one);
# LABELS names every task's (automil.endpoints.TASK_METRICS).
METRICS = TASK_METRICS["classification"]


@dataclass(frozen=True)
class FoldScores(Scores):
    """One fold's figures, each metric's under its name (automil.endpoints.TASK_METRICS), ``None`` where the
    fold's task has no such metric or the fold cannot define it: ``roc_auc`` without bag scores or when the
    fold's bags hold one class; the concordances without an event or a comparable pair; Uno's concordance
    and the integrated Brier score without the training labels, the latter also without survival
    probabilities. ``one_class``: a degenerate fit, every bag given one class (classification) or the same
    prediction (survival, regression)."""

    one_class: bool = False


def task_metrics(y) -> tuple[str, ...]:
    """The metrics the folds of bags labelled ``y`` are scored with (their task's)."""
    return TASK_METRICS[task_of(y)]


def fold_scores(y_true, y_pred, scores=None, classes=None, y_train=None, times=None) -> FoldScores:
    """The :class:`FoldScores` of predictions ``y_pred`` of the labels ``y_true``, by their task.

    Classification: ``y_pred`` classes, ``scores`` bag scores for the ROC AUC (:func:`roc_auc`) of the sorted
    ``classes``. Survival: ``y_pred`` risks (higher: an earlier event), ``scores`` survival probabilities at
    ``times`` (by default ``automil.endpoints.evaluation_times(y_train, y_true)``), one row a bag, ``y_train``
    the labels the model was fit on (:func:`survival_scores`). Regression: ``y_pred`` the predicted values."""
    task = task_of(y_true)
    if task == "survival":
        return survival_scores(y_true, y_pred, scores, y_train, times)
    if task == "regression":
        return regression_scores(y_true, y_pred)
    from sklearn.metrics import accuracy_score, balanced_accuracy_score

    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    return FoldScores(accuracy=float(accuracy_score(y_true, y_pred)),
                      balanced_accuracy=float(balanced_accuracy_score(y_true, y_pred)),
                      roc_auc=None if scores is None else roc_auc(y_true, scores, classes),
                      one_class=one_class(y_true, y_pred))


def survival_scores(y_true, risk, survival=None, y_train=None, times=None) -> FoldScores:
    """Scikit-survival's Harrell's concordance of ``risk`` (``concordance_index_censored``), Uno's
    (``concordance_index_ipcw``, censoring weights from ``y_train``) and the integrated Brier score of the
    ``survival`` probabilities at ``times`` (``integrated_brier_score``; by default
    ``evaluation_times(y_train, y_true)``; of given ``times``, those strictly inside the test bags' range, as
    where part of a fold scored at the whole fold's times). Why Uno's is truncated at the last training time
    and the Brier score kept to the test bags up to it: past it the training bags estimate no censoring
    weight (scikit-survival raises); where every test bag is inside, both are scikit-survival's untruncated
    figures."""
    from sksurv.exceptions import NoComparablePairException
    from sksurv.metrics import concordance_index_censored, concordance_index_ipcw, integrated_brier_score

    risk = np.asarray(risk, dtype=np.float64)
    figures = {}
    try:
        if len(y_true) >= 2 and y_true["event"].any():
            figures["concordance"] = float(concordance_index_censored(y_true["event"], y_true["time"], risk)[0])
            if y_train is not None:
                figures["uno_concordance"] = float(
                    concordance_index_ipcw(y_train, y_true, risk, tau=y_train["time"].max())[0])
    except NoComparablePairException:
        pass
    if y_train is not None and survival is not None:
        times = evaluation_times(y_train, y_true) if times is None else np.asarray(times, dtype=np.float64)
        survival = np.asarray(survival, dtype=np.float64)
        if survival.shape != (len(y_true), len(times)):
            raise ValueError(f"survival probabilities of shape {survival.shape}; expected one row for each of the "
                             f"{len(y_true)} bags and one column for each of the {len(times)} evaluation times")
        kept = y_true["time"] <= y_train["time"].max()
        followed = y_true["time"][kept]
        inside = (times > followed.min()) & (times < followed.max()) if followed.size else times < -np.inf
        if inside.sum() >= 2:
            figures["integrated_brier"] = float(integrated_brier_score(y_train, y_true[kept],
                                                                       survival[kept][:, inside], times[inside]))
    return FoldScores(one_class=one_class(y_true, risk), **figures)


def regression_scores(y_true, y_pred) -> FoldScores:
    """Scikit-learn's R^2, mean absolute error and root mean squared error and scipy's Spearman's rho of the
    predicted values ``y_pred`` of the labels ``y_true`` (R^2 and rho ``None`` where undefined: fewer than two
    bags, or a constant target or prediction for rho)."""
    from scipy.stats import spearmanr
    from sklearn.metrics import mean_absolute_error, r2_score, root_mean_squared_error

    target, y_pred = y_true["target"], np.asarray(y_pred, dtype=np.float64)
    defined = len(target) >= 2
    varied = defined and np.ptp(target) > 0 and np.ptp(y_pred) > 0
    return FoldScores(one_class=one_class(y_true, y_pred), r2=float(r2_score(target, y_pred)) if defined else None,
                      spearman=float(spearmanr(target, y_pred).statistic) if varied else None,
                      mae=float(mean_absolute_error(target, y_pred)),
                      rmse=float(root_mean_squared_error(target, y_pred)))


def one_class(y_true, y_pred) -> bool:
    """Whether predictions ``y_pred`` give every bag one class where the labels ``y_true`` hold several, or
    (survival, regression) every one of several bags the same risk or value: a degenerate fit."""
    several = len(np.unique(y_true)) > 1 if task_of(y_true) == "classification" else len(y_true) > 1
    return bool(len(np.unique(np.asarray(y_pred))) == 1 and several)


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
