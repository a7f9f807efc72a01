"""The chosen model with calibrated bag probabilities and conformal prediction sets (docs/probabilities.md).

The calibration map and the conformity scores come from out-of-fold scores of the model's training bags
(the tuning folds' held-out scores of the best trial, grouped by patient when the folds are): never from
the bags the model is applied to, and without a new fit.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator

from automil.evaluation.conformal import ConformalScores, conformal_scores, prediction_sets
from automil.evaluation.prediction import bag_scores

__all__ = ["ScoreColumns", "Calibrated", "calibrate_model", "calibration", "gives_probabilities", "calibration_map",
           "logits"]


class ScoreColumns(ClassifierMixin, BaseEstimator):
    """A classifier whose decision scores are its input: it lets scikit-learn's ``CalibratedClassifierCV``
    fit its calibration map on scores computed elsewhere (the out-of-fold scores of the tuning folds)."""

    def __init__(self, classes):
        self.classes = classes

    def fit(self, X=None, y=None):
        self.classes_ = np.asarray(self.classes)
        return self

    def decision_function(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        return X[:, 0] if X.shape[1] == 1 else X

    def predict(self, X) -> np.ndarray:
        scores = self.decision_function(X)
        return self.classes_[(scores > 0).astype(int) if scores.ndim == 1 else np.argmax(scores, axis=1)]


def logits(scores, probabilities: bool) -> np.ndarray:
    """Scores as a calibration map's input, shape ``(n_bags, 1)`` (binary) or ``(n_bags, K)``: decision
    scores as they are, probabilities as their logit (binary) or log (multi-class), the scale on which a
    sigmoid or a temperature acts."""
    scores = np.asarray(scores, dtype=np.float64)
    if probabilities:
        clipped = np.clip(scores, 1e-12, 1 - 1e-12)
        scores = np.log(clipped / (1 - clipped)) if scores.ndim == 1 else np.log(clipped)
    return scores.reshape(len(scores), -1)


def calibration_map(scores, y, classes, probabilities: bool) -> CalibratedClassifierCV:
    """scikit-learn's calibration of the scores ``scores`` of bags labelled ``y``: a sigmoid (Platt) for two
    classes, a temperature for more.

    Both have few parameters (two, one), so a few hundred calibration bags fit them without the
    steps isotonic regression learns from every bag; a temperature keeps each bag's ranking of the classes
    (and its arg-max), where a one-vs-rest map per class would not and needs renormalizing.
    """
    method = "sigmoid" if len(classes) == 2 else "temperature"
    frozen = FrozenEstimator(ScoreColumns(list(classes)).fit())
    return CalibratedClassifierCV(frozen, method=method).fit(logits(scores, probabilities), np.asarray(y))


class Calibrated(ClassifierMixin, BaseEstimator):
    """A fitted bag classifier whose ``predict_proba`` is calibrated and which gives conformal prediction
    sets (:meth:`predict_set`). Its labels are the model's own (the leaderboard's figures are theirs);
    everything else (witness, instance scores, the learner inside) is the model's too.

    Parameters
    ----------
    model : fitted estimator
        The chosen model (``Standardized(learner)`` or an ensemble).
    calibrator : CalibratedClassifierCV
        The calibration map (:func:`calibration_map`) from the model's scores to class probabilities.
    conformal : ConformalScores
        The calibration bags' conformity scores (:func:`automil.evaluation.conformal.conformal_scores`).
    probabilities : bool
        Whether the model's scores are probabilities (no ``decision_function``).
    """

    def __init__(self, model, calibrator, conformal: ConformalScores, probabilities: bool):
        self.model = model
        self.calibrator = calibrator
        self.conformal = conformal
        self.probabilities = probabilities

    def __getattr__(self, name: str):
        if name.startswith("__") or "model" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["model"], name)

    @property
    def classes_(self) -> np.ndarray:
        return np.asarray(self.model.classes_)

    @property
    def n_features_in_(self):
        return getattr(self.model, "n_features_in_", None)

    def fit(self, bags, y=None):
        """The model and its calibration are fitted already: nothing to learn."""
        return self

    def predict(self, bags) -> np.ndarray:
        """The model's labels (uncalibrated: near the threshold the calibrated probability of the label may
        be under one half)."""
        return np.asarray(self.model.predict(bags))

    def predict_proba(self, bags) -> np.ndarray:
        """Calibrated class probabilities, shape ``(n_bags, n_classes)``."""
        return self.calibrator.predict_proba(logits(bag_scores(self.model, bags), self.probabilities))

    def predict_set(self, bags, coverage: float = 0.9, mondrian: bool = False, proba=None) -> np.ndarray:
        """Conformal prediction sets at ``coverage`` (boolean, shape ``(n_bags, n_classes)``; see
        :func:`automil.evaluation.conformal.prediction_sets`), from ``proba`` when given (the bags'
        :meth:`predict_proba`, to score them once)."""
        proba = self.predict_proba(bags) if proba is None else proba
        return prediction_sets(proba, self.conformal, coverage, mondrian)


def calibrate_model(model, scores, y, groups=None) -> Calibrated:
    """The model with a calibration map and conformity scores from ``scores``, out-of-fold scores (as
    :func:`~automil.evaluation.prediction.bag_scores` gives them) of training bags labelled ``y``, of the
    patients ``groups`` when given."""
    probabilities = gives_probabilities(model)
    return Calibrated(model, *calibration(scores, y, np.asarray(model.classes_), probabilities, groups), probabilities)


def calibration(scores, y, classes, probabilities: bool, groups=None) -> tuple[CalibratedClassifierCV, ConformalScores]:
    """The calibration map (:func:`calibration_map`) and conformity scores of out-of-fold ``scores`` of bags
    labelled ``y`` (of the patients ``groups`` when given), for a model of ``classes``: what
    :class:`Calibrated` holds. ``ValueError`` when a class has no bag among them."""
    classes, y = np.asarray(classes), np.asarray(y)
    missing = set(classes.tolist()) - set(y.tolist())
    if missing:
        raise ValueError(f"no calibration bag of class {sorted(missing)}")
    calibrator = calibration_map(scores, y, classes, probabilities)
    proba = calibrator.predict_proba(logits(scores, probabilities))
    return calibrator, conformal_scores(proba, np.searchsorted(classes, y), groups)


def gives_probabilities(model) -> bool:
    """Whether the scores :func:`~automil.evaluation.prediction.bag_scores` takes of ``model`` are its
    probabilities (it has no ``decision_function``)."""
    return not hasattr(model, "decision_function") and hasattr(model, "predict_proba")
