"""What a metric scores by chance on given bag labels: the level a score must pass, by its own uncertainty,
before it says that a learner learned something; and the uncertainty of a gain over a rival scored on the
same bags, which a combination of learners must pass before it says that it adds to its best one."""

from __future__ import annotations

import numpy as np

from automil.evaluation.metrics import auc_stderr, score

__all__ = ["chance_level", "above_chance", "score_stderr", "concordance_stderr", "r2_stderr", "spearman_stderr",
           "gain_stderr", "CHANCE_SIGMAS", "GAIN_RESAMPLES"]

# A score is above chance when it passes chance by this many of its standard errors (about 95% one-sided
# confidence with the normal approximation; 2 is the margin the budget's contenders use too).
CHANCE_SIGMAS = 2.0
# Resamples of a paired bootstrap: the standard error it gives is itself within about 4% (1 / sqrt(2 * 300)).
GAIN_RESAMPLES = 300


def chance_level(metric: str, y) -> float:
    """The score of a prediction that ignores the bags: balanced accuracy ``1 / classes``, ROC AUC and the
    concordances 0.5, accuracy the share of the most frequent class (always predicting it), R^2 and
    Spearman's rho 0 (the mean, or a ranking unrelated to the target)."""
    if metric in ("roc_auc", "concordance", "uno_concordance"):
        return 0.5
    if metric in ("r2", "spearman"):
        return 0.0
    _, counts = np.unique(np.asarray(y), return_counts=True)
    if metric == "balanced_accuracy":
        return 1.0 / max(len(counts), 1)
    if metric == "accuracy":
        return float(counts.max() / counts.sum())
    raise ValueError(f"no chance level for metric {metric!r}")


def above_chance(score: float | None, stderr: float, chance: float) -> bool:
    """Whether ``score`` passes ``chance`` by ``CHANCE_SIGMAS`` standard errors ``stderr``."""
    return score is not None and score - CHANCE_SIGMAS * stderr > chance


def score_stderr(metric: str, score: float, counts) -> float:
    """The standard error of ``score``, a figure of ``metric``, over the bags it scored (``counts``:
    ``automil.endpoints.label_counts``, how many of each class; the events and the censored bags for the
    concordances; the bags for R^2 and rho): binomial for accuracy, for balanced accuracy each class's recall
    taken at ``score``, Hanley and McNeil's (1982) for ROC AUC
    (:func:`~automil.evaluation.metrics.auc_stderr`), and :func:`concordance_stderr`,
    :func:`r2_stderr`, :func:`spearman_stderr`. Why: a score's spread over three folds estimates this with
    two degrees of freedom, so two learners of equal skill can differ several fold in it; the bags an
    estimate scored give its uncertainty without that noise. At chance it is the spread of a prediction that
    ignores the bags, the test of a permutation of their labels."""
    counts = np.asarray(counts, dtype=float)
    if metric in ("concordance", "uno_concordance"):
        return concordance_stderr(score, counts[0], counts.sum(), uno=metric == "uno_concordance")
    if metric == "r2":
        return r2_stderr(score, counts.sum())
    if metric == "spearman":
        return spearman_stderr(score, counts.sum())
    counts = counts[counts > 0]
    s = min(max(float(score), 0.0), 1.0)
    if metric == "accuracy":
        return float(np.sqrt(s * (1 - s) / counts.sum()))
    if metric == "balanced_accuracy":
        return float(np.sqrt(s * (1 - s) * np.sum(1 / counts)) / len(counts))
    if metric == "roc_auc":
        return auc_stderr(s, counts)
    raise ValueError(f"no standard error for metric {metric!r}")


def concordance_stderr(concordance: float, events: float, bags: float, uno: bool = False) -> float:
    """The standard error of a concordance over ``bags`` of which ``events`` had their event: at 0.5 the
    null spread of Kendall's ``(tau + 1) / 2`` over the events, ``sqrt((2d + 5) / (18 d (d - 1)))`` for
    ``d`` events, shrunk by ``2 sqrt(C (1 - C))`` away from 0.5 as Hanley and McNeil's AUC error shrinks;
    Uno's widened by ``(bags / events) ** 0.25`` for its censoring weights. Why Kendall's: Harrell's C
    without censoring is ``(tau + 1) / 2``, and a projection of C on the bags' ranks gives the same
    ``1 / (9 d)`` under random censoring, the censored bags adding no spread of their own. Simulated (40 to
    200 bags, 0 to 85% censored, proportional hazards): Harrell's from 2% below to 19% above the spread of C
    at 0.5, up to 26% above it at C = 0.8; Uno's from 1% below to 90% above (its weights spread more the
    more bags are censored; the widening is fitted to exponential censoring, where they spread most). One
    event or none: 0.5, nothing told apart."""
    d = float(events)
    if d < 2:
        return 0.5
    c = min(max(float(concordance), 0.0), 1.0)
    null = np.sqrt((2 * d + 5) / (18 * d * (d - 1)))
    widening = (float(bags) / d) ** 0.25 if uno else 1.0
    return float(2 * np.sqrt(c * (1 - c)) * null * widening)


def r2_stderr(r2: float, bags: float) -> float:
    """The standard error of an R^2 over ``bags``: the delta method's ``2 r (1 - R^2) / sqrt(n - 1)`` with
    ``r = sqrt(R^2)``, the correlation of a calibrated prediction, and ``r`` at least ``1 / sqrt(n - 1)``,
    the null spread of a correlation. Why the floor: at 0 the delta method gives no spread, yet a prediction
    unrelated to the target reaches ``R^2 = r^2`` (its best scale) with ``r`` spread as ``1 / sqrt(n - 1)``;
    a figure passes chance by two errors only above ``4 / (n - 1)``, where a chance ``r`` of two null
    errors would take it. Simulated (30 to 300 bags, normal noise): from 17% below the spread of R^2 (30
    bags at R^2 0.16) to 39% above it (at 0)."""
    n = float(bags)
    if n < 3:
        return 1.0
    r = max(np.sqrt(max(float(r2), 0.0)), 1 / np.sqrt(n - 1))
    return float(2 * r * (1 - min(max(float(r2), 0.0), 1.0)) / np.sqrt(n - 1))


def spearman_stderr(rho: float, bags: float) -> float:
    """The standard error of Spearman's rho over ``bags``: Fieller, Hartley and Pearson's (1957)
    ``sqrt(1.06 / (n - 3))`` of its Fisher z, back on rho's scale (times ``1 - rho^2``); at 0 within 8% of
    the exact null ``1 / sqrt(n - 1)`` (above it)."""
    n = float(bags)
    if n < 4:
        return 1.0
    rho = min(max(float(rho), -1.0), 1.0)
    return float((1 - rho * rho) * np.sqrt(1.06 / (n - 3)))


def gain_stderr(metric: str, y_index, ours, theirs, seed: int = 0) -> float:
    """The standard error of ``score(ours) - score(theirs)`` over the bags: two predictions (probabilities,
    one row a bag) of the same bags, labelled by class index ``y_index``, scored by ``metric``
    (:func:`~automil.evaluation.metrics.score`) on ``GAIN_RESAMPLES`` resamples of the bags drawn within each
    class. Why paired: the two scores share their bags, so which bags were drawn moves both alike and
    cancels in the difference; what is left is the bags where they disagree. Twice the error of one score
    would hide every real gain on a few hundred bags; the difference of two means hides none of its noise."""
    y_index = np.asarray(y_index)
    rng = np.random.default_rng(seed)
    by_class = [np.flatnonzero(y_index == k) for k in np.unique(y_index)]
    drawn = [[rng.choice(members, size=len(members)) for members in by_class] for _ in range(GAIN_RESAMPLES)]
    draws = [np.array(rows) for rows in zip(*drawn, strict=True)]  # each class's bags, a row a resample
    gains = _resampled(metric, y_index, ours, draws) - _resampled(metric, y_index, theirs, draws)
    return float(np.std(gains, ddof=1))


def _resampled(metric: str, y_index: np.ndarray, proba, draws: list[np.ndarray]) -> np.ndarray:
    """``metric`` of ``proba`` on every resample (``draws``: each class's drawn bags, a row a resample), as
    :func:`~automil.evaluation.metrics.score` gives it: at once over the resamples, but ROC AUC of more than
    two classes, which :func:`~automil.evaluation.metrics.score` computes one resample at a time."""
    proba = np.asarray(proba)
    hit = np.argmax(proba, axis=1) == y_index
    if metric == "accuracy":
        return np.concatenate([hit[rows] for rows in draws], axis=1).mean(axis=1)
    if metric == "balanced_accuracy":
        return np.mean([hit[rows].mean(axis=1) for rows in draws], axis=0)
    if metric == "roc_auc" and len(draws) == proba.shape[1] == 2:  # Mann-Whitney: the positives' mean rank
        from scipy.stats import rankdata

        negative, positive = proba[draws[0], 1], proba[draws[1], 1]
        n_negative, n_positive = negative.shape[1], positive.shape[1]
        ranks = rankdata(np.concatenate([negative, positive], axis=1), axis=1)[:, n_negative:]
        return (ranks.sum(axis=1) - n_positive * (n_positive + 1) / 2) / (n_negative * n_positive)
    rows = np.concatenate(draws, axis=1)
    return np.array([score(y_index[drawn], proba[drawn], metric) for drawn in rows])
