"""The chosen model with calibrated bag probabilities and conformal prediction sets (docs/probabilities.md).

The calibration map comes from out-of-fold scores of the model's training bags (the tuning folds' held-out
scores of the best trial), without a new fit. The prediction sets come from a second fit of the same
configuration without one part of those bags (the held-apart model): its scores of the bags it never saw
give the conformity scores, and it scores the new bags, so that the two are exchangeable (split conformal).
When sets are asked for, that model answers alone: its labels, probabilities and sets (:class:`ConformalAnswer`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator

from automil.evaluation.conformal import ConformalScores, conformal_scores, prediction_sets, set_labels
from automil.evaluation.prediction import bag_scores

__all__ = ["ScoreColumns", "CalibrationBags", "HeldApart", "ConformalAnswer", "Calibrated", "calibrate_model",
           "conformity", "gives_probabilities", "calibration_map", "logits", "NO_SETS"]

NO_SETS = ("this model gives no prediction sets: no fit of it without its calibration bags was kept (that fit "
           "failed or was cut by the run's time-out, or the model was logged before automil made one)")


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
    (and its arg-max), where a one-vs-rest map per class would not and needs renormalizing. ``ValueError``
    when a class has no bag among them.
    """
    missing = set(np.asarray(classes).tolist()) - set(np.asarray(y).tolist())
    if missing:
        raise ValueError(f"no calibration bag of class {sorted(missing)}")
    method = "sigmoid" if len(classes) == 2 else "temperature"
    frozen = FrozenEstimator(ScoreColumns(list(classes)).fit())
    return CalibratedClassifierCV(frozen, method=method).fit(logits(scores, probabilities), np.asarray(y))


@dataclass(frozen=True)
class CalibrationBags:
    """The calibration bags of the prediction sets: the held-apart model's (fitted without them) ``scores`` of
    them, their labels ``y`` and their patients ``groups`` (``None``: every bag counts once)."""

    scores: np.ndarray
    y: np.ndarray
    groups: np.ndarray | None = None


@dataclass(frozen=True)
class HeldApart:
    """A fit of a configuration without the bags ``calibration`` (their indices): its ``scores`` of every bag
    (NaN where it scored none; it scores its calibration bags, and the outer fold when one is measured) and the
    fitted ``model`` when it is kept (for a logged model's sets)."""

    calibration: np.ndarray
    scores: np.ndarray
    model: object = None

    def bags(self, bags) -> CalibrationBags:
        """Its calibration bags among ``bags`` (those it was fitted apart from), grouped as they are."""
        groups = None if bags.groups is None else bags.groups[self.calibration]
        return CalibrationBags(self.scores[self.calibration], bags.y[self.calibration], groups)


@dataclass(frozen=True)
class ConformalAnswer:
    """One model's answer for bags, the held-apart model's: its ``labels`` (each the class its bag's set
    decides, the most probable class of the set), its calibrated probabilities ``proba`` and its conformal
    prediction ``sets`` (boolean), both of shape ``(n_bags, n_classes)``. The coverage is a promise about
    that model, so the label and probabilities beside a set are its too."""

    labels: np.ndarray
    proba: np.ndarray
    sets: np.ndarray


class Calibrated(ClassifierMixin, BaseEstimator):
    """A fitted bag classifier whose ``predict_proba`` is calibrated and which gives conformal prediction
    sets (:meth:`predict_conformal`). ``predict``, ``predict_proba`` and everything else (witness, instance
    scores, the learner inside) are the model's (the full-data fit: the leaderboard's figures are its labels);
    :meth:`predict_conformal` and :meth:`predict_set` are the held-apart model's.

    Parameters
    ----------
    model : fitted estimator
        The chosen model (``Standardized(learner)`` or an ensemble).
    calibrator : CalibratedClassifierCV
        The calibration map (:func:`calibration_map`) from the model's scores to class probabilities.
    probabilities : bool
        Whether the model's scores are probabilities (no ``decision_function``).
    held_apart : fitted estimator, optional
        The same configuration fitted without the calibration bags; the sets score bags with it. ``None``: no
        sets.
    conformal : ConformalScores, optional
        The calibration bags' conformity scores under ``held_apart`` and ``calibrator`` (:func:`conformity`).
    """

    held_apart = None  # a model logged before the sets came from a held-apart model has none

    def __init__(self, model, calibrator, probabilities: bool, held_apart=None,
                 conformal: ConformalScores | None = None):
        self.model = model
        self.calibrator = calibrator
        self.probabilities = probabilities
        self.held_apart = held_apart
        self.conformal = conformal

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

    def predict_conformal(self, bags, coverage: float = 0.9, mondrian: bool = False) -> ConformalAnswer:
        """The held-apart model's labels, calibrated probabilities and conformal prediction sets at
        ``coverage`` (see :func:`automil.evaluation.conformal.prediction_sets`; class-conditional when
        ``mondrian``): the model the conformity scores came from, so that new bags are scored as the
        calibration bags were, and one model behind all three. ``ValueError`` (:data:`NO_SETS`) without one."""
        if self.held_apart is None:
            raise ValueError(NO_SETS)
        proba = self.calibrator.predict_proba(logits(bag_scores(self.held_apart, bags), self.probabilities))
        sets = prediction_sets(proba, self.conformal, coverage, mondrian)
        return ConformalAnswer(self.classes_[set_labels(proba, sets)], proba, sets)

    def predict_set(self, bags, coverage: float = 0.9, mondrian: bool = False) -> np.ndarray:
        """The sets of :meth:`predict_conformal` alone (boolean, shape ``(n_bags, n_classes)``)."""
        return self.predict_conformal(bags, coverage, mondrian).sets


def calibrate_model(model, scores, y, held_apart=None, calibration: CalibrationBags | None = None) -> Calibrated:
    """The model with the calibration map of ``scores``, out-of-fold scores (as
    :func:`~automil.evaluation.prediction.bag_scores` gives them) of training bags labelled ``y``; with a
    ``held_apart`` model and its ``calibration`` bags, prediction sets too. ``ValueError`` when a class has no
    bag among ``y``."""
    probabilities, classes = gives_probabilities(model), np.asarray(model.classes_)
    calibrator = calibration_map(scores, y, classes, probabilities)
    if held_apart is None or calibration is None:
        return Calibrated(model, calibrator, probabilities)
    return Calibrated(model, calibrator, probabilities, held_apart,
                      conformity(calibrator, calibration, classes, probabilities))


def conformity(calibrator, calibration: CalibrationBags, classes, probabilities: bool) -> ConformalScores:
    """The conformity scores of the ``calibration`` bags: their held-apart scores through the map ``calibrator``
    of a model of ``classes``."""
    proba = calibrator.predict_proba(logits(calibration.scores, probabilities))
    return conformal_scores(proba, np.searchsorted(np.asarray(classes), np.asarray(calibration.y)), calibration.groups)


def gives_probabilities(model) -> bool:
    """Whether the scores :func:`~automil.evaluation.prediction.bag_scores` takes of ``model`` are its
    probabilities (it has no ``decision_function``)."""
    return not hasattr(model, "decision_function") and hasattr(model, "predict_proba")
