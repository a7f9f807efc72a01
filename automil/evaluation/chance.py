"""What a metric scores by chance on given bag labels: the level a score must pass, by its own uncertainty,
before it says that a learner learned something; and the uncertainty of a gain over a rival scored on the
same bags, which a combination of learners must pass before it says that it adds to its best one."""

from __future__ import annotations

import numpy as np

from automil.evaluation.metrics import auc_stderr, score

__all__ = ["chance_level", "above_chance", "score_stderr", "gain_stderr", "CHANCE_SIGMAS", "GAIN_RESAMPLES"]

# A score is above chance when it passes chance by this many of its standard errors (about 95% one-sided
# confidence with the normal approximation; 2 is the margin the budget's contenders use too).
CHANCE_SIGMAS = 2.0
# Resamples of a paired bootstrap: the standard error it gives is itself within about 4% (1 / sqrt(2 * 300)).
GAIN_RESAMPLES = 300


def chance_level(metric: str, y) -> float:
    """The score of a prediction that ignores the bags: balanced accuracy ``1 / classes``, ROC AUC 0.5,
    accuracy the share of the most frequent class (always predicting it)."""
    _, counts = np.unique(np.asarray(y), return_counts=True)
    if metric == "balanced_accuracy":
        return 1.0 / max(len(counts), 1)
    if metric == "roc_auc":
        return 0.5
    if metric == "accuracy":
        return float(counts.max() / counts.sum())
    raise ValueError(f"no chance level for metric {metric!r}")


def above_chance(score: float | None, stderr: float, chance: float) -> bool:
    """Whether ``score`` passes ``chance`` by ``CHANCE_SIGMAS`` standard errors ``stderr``."""
    return score is not None and score - CHANCE_SIGMAS * stderr > chance


def score_stderr(metric: str, score: float, counts) -> float:
    """The standard error of ``score``, a figure of ``metric``, over the bags it scored (``counts``: how many
    of each class): binomial for accuracy, for balanced accuracy each class's recall taken at ``score``, and
    Hanley and McNeil's (1982) for ROC AUC (:func:`~automil.evaluation.metrics.auc_stderr`). Why: a score's
    spread over three folds estimates this with two degrees of freedom, so two learners of equal skill can
    differ several fold in it; the bags an estimate scored give its uncertainty without that noise. At chance it is the
    spread of a prediction that ignores the bags, the test of a permutation of their labels."""
    counts = np.asarray([c for c in counts if c > 0], dtype=float)
    s = min(max(float(score), 0.0), 1.0)
    if metric == "accuracy":
        return float(np.sqrt(s * (1 - s) / counts.sum()))
    if metric == "balanced_accuracy":
        return float(np.sqrt(s * (1 - s) * np.sum(1 / counts)) / len(counts))
    if metric == "roc_auc":
        return auc_stderr(s, counts)
    raise ValueError(f"no standard error for metric {metric!r}")


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
