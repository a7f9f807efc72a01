"""Ensemble selection over learners (Caruana et al., 2004): every learner's out-of-fold bag scores are made
comparable by a calibration map, then a greedy forward selection with replacement picks the weighted
average of calibrated probabilities of least log-loss (the tuning metric breaks ties). Plain numpy on
plain arrays."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.metaestimators import available_if

from automil.evaluation.metrics import log_loss, score
from automil.evaluation.prediction import bag_scores, one_column_if_binary

__all__ = ["ROUNDS", "calibrate", "calibrated", "select", "Ensemble"]

# Rounds of the greedy selection. With replacement the weights are multiples of 1/ROUNDS: 25 gives a
# resolution of 4 points of weight, finer than the out-of-fold metric of a few hundred bags can tell
# apart, while few enough rounds keep the hill climb from chasing single bags (Caruana et al. saw the
# validation score flatten after a few dozen additions).
ROUNDS = 25


def _features(scores) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    return scores.reshape(len(scores), -1)


def calibrate(scores, y):
    """The calibration map of one learner (Platt scaling: a logistic regression on its standardized
    scores), fitted on its out-of-fold ``scores`` of bags labelled ``y``; it maps scores to class
    probabilities in the order of ``np.unique(y)``."""
    return make_pipeline(StandardScaler(), LogisticRegression()).fit(_features(scores), np.asarray(y))


def calibrated(calibrator, scores) -> np.ndarray:
    """Class probabilities, shape ``(n_bags, K)``, of ``scores`` through ``calibrator``."""
    return calibrator.predict_proba(_features(scores))


def select(probas, y_index, metric: str = "balanced_accuracy", rounds: int = ROUNDS, start=None) -> np.ndarray:
    """Weights of the candidates (summing to 1) chosen by greedy forward selection with replacement.

    ``probas`` has shape ``(n_candidates, n_bags, K)``: every candidate's calibrated probabilities of the
    same bags, whose class indices are ``y_index``. The selection starts from the single candidate of least
    log-loss and adds, ``rounds - 1`` times, the candidate whose addition gives the average of least
    log-loss. A proper scoring rule, not the thresholded ``metric``: on a few hundred bags the metric
    rewards a weak candidate with nearly flat probabilities as a shift of the decision threshold fitted to
    those bags, which the log-loss does not. Ties go to the better ``metric``, then to a candidate already
    chosen (fewer members), then to the earlier one, so it is deterministic. ``start`` (counts per
    candidate) begins the climb from an ensemble already chosen, e.g. Caruana et al.'s sorted
    initialization; the climb adds the rounds left.
    """
    probas = np.asarray(probas, dtype=np.float64)
    counts = np.zeros(len(probas), dtype=np.int64) if start is None else np.array(start, dtype=np.int64)
    total = np.tensordot(counts, probas, axes=1)
    for step in range(int(counts.sum()), rounds):
        averages = [(total + p) / (step + 1) for p in probas]
        keys = [(-log_loss(y_index, a), score(y_index, a, metric)) for a in averages]
        tied = np.array([j for j, key in enumerate(keys) if key == max(keys)])
        chosen = tied[counts[tied] > 0]
        pick = int(chosen[0] if chosen.size else tied[0])
        counts[pick] += 1
        total += probas[pick]
    return counts / counts.sum()


class Ensemble(ClassifierMixin, BaseEstimator):
    """A weighted average of fitted bag classifiers' calibrated probabilities (ensemble selection).

    Parameters
    ----------
    members : list of fitted estimators
        Bag classifiers (e.g. ``automil.evaluation.standardized.Standardized``) fitted on the same classes.
    calibrators : list
        One calibration map per member (:func:`calibrate`), from its scores to class probabilities.
    weights : array-like of shape (n_members,)
        The members' weights (:func:`select`), summing to 1.
    names : list of str, optional
        The members' learner names, for display.

    References
    ----------
    R. Caruana, A. Niculescu-Mizil, G. Crew, A. Ksikes. Ensemble selection from libraries of models.
    ICML 2004.
    """

    def __init__(self, members, calibrators, weights, names=None):
        self.members = members
        self.calibrators = calibrators
        self.weights = weights
        self.names = names

    @property
    def classes_(self) -> np.ndarray:
        return np.asarray(self.members[0].classes_)

    @property
    def n_features_in_(self):
        return getattr(self.members[0], "n_features_in_", None)

    def fit(self, bags, y=None):
        """The members are fitted already (an ensemble is assembled from them): nothing to learn."""
        return self

    def predict_proba(self, bags) -> np.ndarray:
        """The weighted average of the members' calibrated probabilities, shape ``(n_bags, n_classes)``."""
        return sum(w * calibrated(c, bag_scores(m, bags))
                   for m, c, w in zip(self.members, self.calibrators, self.weights, strict=True))

    def decision_function(self, bags) -> np.ndarray:
        """Log of :meth:`predict_proba` (clipped away from 0), shape ``(n_bags, n_classes)``."""
        return np.log(np.clip(self.predict_proba(bags), 1e-12, None))

    def predict(self, bags) -> np.ndarray:
        """Bag labels: the class of highest averaged probability."""
        return self.classes_[np.argmax(self.predict_proba(bags), axis=1)]

    @available_if(lambda self: any(hasattr(m, "instance_scores") for m in self.members))
    def instance_scores(self, bags) -> np.ndarray:
        """Every instance's calibrated probability of each class, shape ``(n_instances, n_classes)``: what
        heatmaps draw, so an ensemble chosen as the model draws them too.

        Each member with instance scores maps them through its own calibration map, the one its bag scores
        go through: an instance's score is taken as the score the member would give a bag of that instance
        alone. The average weighs them by the ensemble's weights renormalized over these members; members
        without instance scores are left out (none: the ensemble has no ``instance_scores``).
        """
        scoring = [(m, c, w) for m, c, w in zip(self.members, self.calibrators, self.weights, strict=True)
                   if hasattr(m, "instance_scores")]
        total = sum(w for _, _, w in scoring)
        return sum(w / total * calibrated(c, one_column_if_binary(np.asarray(m.instance_scores(bags), np.float64)))
                   for m, c, w in scoring)
