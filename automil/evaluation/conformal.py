"""Split-conformal prediction sets of bags: the classes whose calibrated probability is high enough that,
over calibration bags like the new ones, the true class is left out of at most ``1 - coverage`` of them.

The conformity score of a bag and a class is one minus the calibrated probability of that class (the
"least ambiguous set" score of Sadinle, Lei and Wasserman, 2019); a class enters the set when its score
is at most the calibration scores' conformal quantile. Plain numpy: the method is a weighted quantile,
and the calibration scores are out-of-fold scores no conformal library takes without a model that
scores the calibration bags itself (MAPIE calls the estimator on them; crepes' class-conditional mode
lives in its WrapClassifier, which does the same).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ConformalScores", "conformal_scores", "group_weights", "threshold", "prediction_sets", "set_labels"]


@dataclass(frozen=True)
class ConformalScores:
    """The calibration bags' conformity ``scores`` (one minus the calibrated probability of the true
    class), their true class indices ``labels``, and their ``weights``: 1 per bag, or 1 / (bags of its
    patient) when groups are given, so that every patient counts once (a patient with many bags would
    otherwise stand for many exchangeable draws it is not)."""

    scores: np.ndarray
    labels: np.ndarray
    weights: np.ndarray


def conformal_scores(proba, y_index, groups=None) -> ConformalScores:
    """The :class:`ConformalScores` of calibration bags with calibrated probabilities ``proba`` (shape
    ``(n_bags, K)``) and true class indices ``y_index``, grouped by ``groups`` when given."""
    proba, y_index = np.asarray(proba, dtype=np.float64), np.asarray(y_index, dtype=np.int64)
    return ConformalScores(1.0 - proba[np.arange(len(y_index)), y_index], y_index, group_weights(groups, len(y_index)))


def group_weights(groups, n_bags: int) -> np.ndarray:
    """1 per bag without ``groups``; else 1 / (the number of bags of the bag's group)."""
    if groups is None:
        return np.ones(n_bags)
    _, inverse, counts = np.unique(np.asarray(groups), return_inverse=True, return_counts=True)
    return 1.0 / counts[inverse]


def threshold(scores, weights, coverage: float) -> float:
    """The split-conformal quantile: the smallest calibration score ``s`` whose weighted share of scores at
    most ``s`` reaches ``coverage * (n + 1) / n``, with ``n`` the total weight (bags, or patients). With
    unit weights that is the ``ceil((n + 1) * coverage)``-th smallest score, which gives a new exchangeable
    bag's true class a probability of at least ``coverage`` to score at most it. Infinite (every class in
    the set) when ``n`` is too small for the coverage."""
    scores, weights = np.asarray(scores, dtype=np.float64), np.asarray(weights, dtype=np.float64)
    n = weights.sum()
    if n == 0 or coverage * (n + 1) > n * (1 + 1e-12):
        return np.inf
    order = np.argsort(scores, kind="stable")
    reached = np.cumsum(weights[order])
    position = np.searchsorted(reached, coverage * (n + 1) * (1 - 1e-12))
    return float(scores[order][min(position, len(order) - 1)])


def prediction_sets(proba, calibration: ConformalScores, coverage: float, mondrian: bool = False) -> np.ndarray:
    """The prediction sets of bags with calibrated probabilities ``proba`` (shape ``(n_bags, K)``), as a
    boolean array of the same shape.

    Marginal (default): one quantile of every calibration bag, the true class in the set for at least
    ``coverage`` of new bags on average over the classes. ``mondrian``: one quantile per class from the
    calibration bags of that class, so that coverage holds within each class (the rarer class is not
    left to carry the misses); a class with too few calibration bags for the coverage is always in.

    A set that would be empty holds the class of highest probability instead: a larger set keeps the
    guarantee, and "no class" is no answer to act on.
    """
    if not 0 < coverage < 1:
        raise ValueError(f"the coverage must be between 0 and 1 (exclusive), got {coverage}")
    proba = np.asarray(proba, dtype=np.float64)
    if mondrian:
        limits = np.array([threshold(calibration.scores[calibration.labels == k],
                                     calibration.weights[calibration.labels == k], coverage)
                           for k in range(proba.shape[1])])
    else:
        limits = np.full(proba.shape[1], threshold(calibration.scores, calibration.weights, coverage))
    sets = 1.0 - proba <= limits[None, :]
    empty = ~sets.any(axis=1)
    sets[empty, np.argmax(proba[empty], axis=1)] = True
    return sets


def set_labels(proba, sets) -> np.ndarray:
    """The class index each bag's set decides: the most probable class of its set (``sets`` as
    :func:`prediction_sets` gives them for ``proba``), so that a set of one class and the label never differ.
    With marginal sets that is the arg-max of ``proba`` (one threshold for every class: a set holds the
    most probable class whenever it holds any); with class-conditional ones a set of one class may hold a
    class other than the most probable, and the label is the set's."""
    return np.argmax(np.where(np.asarray(sets, dtype=bool), np.asarray(proba, dtype=np.float64), -np.inf), axis=1)
