"""How a learner is scored: the standardizer, folds over bags, metrics, and the two protocols."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from automil.bags import Bags, as_bags

__all__ = ["Standardized", "instance_scaling", "bag_folds", "repeat_seeds", "fold_splits", "cross_validated_predictions",
           "fold_digest",
           "fit_predict", "load_learners", "fold_scores", "mean_std"]


def instance_scaling(X):
    """Instance-level mean and standard deviation of ``X`` (algorithms.md 1.5).

    A zero standard deviation becomes 1 so constant features pass through unchanged. For sparse ``X``
    the mean is ``None``: centring would fill in every zero, so sparse data is only scaled.
    """
    if sp.issparse(X):
        mean = np.asarray(X.mean(axis=0)).ravel()
        var = np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean**2
        scale = np.sqrt(np.maximum(var, 0.0))
        mean = None
    else:
        mean = X.mean(axis=0)
        scale = X.std(axis=0)
    scale[scale <= np.finfo(np.float64).eps * (1.0 if mean is None else np.maximum(1.0, np.abs(mean)))] = 1.0
    return mean, scale


def _inner_has(name):
    return lambda self: hasattr(self.estimator_ if hasattr(self, "estimator_") else self.estimator, name)


class Standardized(ClassifierMixin, BaseEstimator):
    """A bag classifier behind instance standardization fitted on its own training bags only.

    This is the unit the evaluation protocols fit on every training fold (so no statistic of a test fold
    ever reaches a fit) and the model that tracking logs (so a loaded model standardizes new bags itself).

    Parameters
    ----------
    estimator : BagClassifier
        The learner; cloned at ``fit``.

    Attributes
    ----------
    estimator_ : BagClassifier
        The learner fitted on the standardized training bags.
    mean_ : ndarray of shape (n_features,) or None
        Instance mean of the training bags; ``None`` for sparse instances (scaled only).
    scale_ : ndarray of shape (n_features,)
        Instance standard deviation of the training bags, with zeros replaced by 1.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    """

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, bags, y=None):
        """Fit the scaling on the instances of ``bags``, then the learner on the scaled bags."""
        bags = as_bags(bags, y)
        self.mean_, self.scale_ = instance_scaling(bags.X)
        self.n_features_in_ = bags.n_features
        self.estimator_ = clone(self.estimator).fit(self.transform(bags))
        self.classes_ = self.estimator_.classes_
        return self

    def transform(self, bags) -> Bags:
        """The same bags with standardized instances (statistics of the training bags)."""
        check_is_fitted(self, "scale_")
        bags = as_bags(bags)
        if bags.n_features != self.n_features_in_:
            raise ValueError(f"bags have {bags.n_features} features, but the standardizer was fitted with "
                             f"{self.n_features_in_}")
        if bags.is_sparse:
            if self.mean_ is not None:
                X = (bags.X.toarray() - self.mean_) / self.scale_
            else:
                X = bags.X @ sp.diags(1.0 / self.scale_)
        else:
            X = bags.X / self.scale_ if self.mean_ is None else (bags.X - self.mean_) / self.scale_
        return bags.with_instances(X)

    def predict(self, bags) -> np.ndarray:
        """Bag labels."""
        return self.estimator_.predict(self.transform(bags))

    @available_if(_inner_has("decision_function"))
    def decision_function(self, bags) -> np.ndarray:
        """Bag scores of the learner, shape ``(n_bags, n_classes)``."""
        return self.estimator_.decision_function(self.transform(bags))

    @available_if(_inner_has("predict_proba"))
    def predict_proba(self, bags) -> np.ndarray:
        """Class probabilities of the learner, shape ``(n_bags, n_classes)``."""
        return self.estimator_.predict_proba(self.transform(bags))

    @available_if(_inner_has("_witness"))
    def witness(self, bags) -> np.ndarray:
        """The learner's witness position inside each bag, shape ``(n_bags,)``."""
        return self.estimator_.witness(self.transform(bags))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = True
        return tags


# ---- folds over bags ---------------------------------------------------------------------------------
def bag_folds(y, n_splits: int, seed: int) -> np.ndarray:
    """The fold (0..n_splits-1) of every bag: stratified by bag label, shuffled by ``seed``.

    Bags are the units, so a bag's instances always land in one fold together.
    """
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(y)
    if n_splits < 2:
        raise ValueError(f"folds must be at least 2, got {n_splits}")
    _, counts = np.unique(y, return_counts=True)
    if counts.min() < n_splits:
        raise ValueError(f"{n_splits}-fold cross-validation needs at least {n_splits} bags of every class; "
                         f"the smallest class has {counts.min()}")
    assignment = np.empty(len(y), dtype=np.int64)
    splitter = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    for fold, (_, test) in enumerate(splitter.split(np.zeros(len(y)), y)):
        assignment[test] = fold
    return assignment


def repeat_seeds(seed: int, n_repeats: int) -> list[int]:
    """Independent fold seeds for repeated cross-validation, derived from ``seed`` (algorithms.md 1.6)."""
    return [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(n_repeats)]


def fold_splits(assignment, exclude=None) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(train, test)`` bag indices, one pair per fold, leaving fold ``exclude`` out of both.

    With ``exclude=i`` these are the inner splits of outer split ``i`` in nested cross-validation: the
    outer test fold reaches neither a training nor a test set while split ``i`` is tuned.
    """
    assignment = np.asarray(assignment)
    folds = [f for f in np.unique(assignment) if f != exclude]
    usable = assignment != exclude
    return [(np.flatnonzero(usable & (assignment != f)), np.flatnonzero(assignment == f)) for f in folds]


def cross_validated_predictions(estimator, bags: Bags, n_splits: int = 10, seed: int = 0):
    """Out-of-fold bag predictions with fixed parameters: the protocol of the accuracy checks.

    Every fold of ``bag_folds(bags.y, n_splits, seed)`` is predicted by ``Standardized(estimator)``
    fitted on the other folds. Returns the predictions, the fold of every bag and the seconds spent
    fitting and predicting.
    """
    import time

    assignment = bag_folds(bags.y, n_splits, seed)
    predicted = np.empty(bags.n_bags, dtype=bags.y.dtype)
    start = time.perf_counter()
    for train, test in fold_splits(assignment):
        predicted[test] = Standardized(estimator).fit(bags.subset(train)).predict(bags.subset(test))
    return predicted, assignment, time.perf_counter() - start


def fold_digest(assignment) -> str:
    """A short fingerprint of a fold assignment (stored with the study, shown in reports)."""
    import hashlib

    return hashlib.sha256(np.asarray(assignment, dtype=np.int64).tobytes()).hexdigest()[:16]


# ---- one fit ---------------------------------------------------------------------------------------
def load_learners(_=None):
    """Import every learner (a worker's preload, so imports never count against a fit's time limit)."""
    from automil import plugins

    plugins.learners()


def fit_predict(bags: Bags, learner: str, params: dict, train, test=None, seed=None, return_model=False):
    """Fit ``Standardized(learner(**params))`` on the ``train`` bags and predict the ``test`` bags.

    This is the unit of work a :class:`~automil.isolation.FitWorker` runs: its arguments are small
    (a learner name and bag indices into data the worker already holds). ``seed`` goes to the learner's
    ``random_state`` unless ``params`` sets it. Returns a dict with ``y_pred`` (``None`` without
    ``test``), ``fit_seconds``, ``predict_seconds`` and, with ``return_model``, ``model``.

    Raises
    ------
    ValueError
        When the learner's predictions have the wrong shape or labels it was not trained on; the message
        names the learner's plugin.
    """
    import time

    from automil import plugins

    try:
        spec = plugins.get_learner(learner)
    except plugins.UnknownNameError as error:
        failures = "; ".join(f"{name}: {why}" for name, why in plugins.registry("learners").failures.items())
        where = f"; plugins that failed to load there: {failures}" if failures else ""
        raise ValueError(f"{error} (in the worker process{where})") from None
    estimator = spec.build(**params)
    if seed is not None and "random_state" in estimator.get_params() and "random_state" not in params:
        estimator.set_params(random_state=seed)
    model = Standardized(estimator)
    training = bags.subset(train)
    start = time.perf_counter()
    model.fit(training)
    fit_seconds = time.perf_counter() - start
    y_pred, predict_seconds = None, 0.0
    if test is not None:
        testing = bags.subset(test)
        start = time.perf_counter()
        try:
            y_pred = np.asarray(model.predict(testing))
        except ValueError as error:  # e.g. scores of the wrong shape or NaN (BagClassifier checks them)
            raise ValueError(f"learner {learner!r} of plugin {spec.plugin!r}: {error}") from None
        predict_seconds = time.perf_counter() - start
        if y_pred.shape != (testing.n_bags,):
            raise ValueError(f"learner {learner!r} of plugin {spec.plugin!r} predicted an array of shape "
                             f"{y_pred.shape} for {testing.n_bags} bags (expected ({testing.n_bags},))")
        unknown = np.setdiff1d(y_pred, training.classes)
        if unknown.size:
            raise ValueError(f"learner {learner!r} of plugin {spec.plugin!r} predicted labels it was not "
                             f"trained on: {unknown[:5].tolist()}")
    return {"y_pred": y_pred, "fit_seconds": fit_seconds, "predict_seconds": predict_seconds,
            "model": model if return_model else None}


# ---- metrics ---------------------------------------------------------------------------------------


def fold_scores(y_true, y_pred) -> dict:
    """ACC, BACC and whether every bag was given one class (``one_class``: a degenerate fit)."""
    from sklearn.metrics import accuracy_score, balanced_accuracy_score

    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    return {"accuracy": float(accuracy_score(y_true, y_pred)),
            "balanced_accuracy": float(balanced_accuracy_score(y_true, y_pred)),
            "one_class": bool(len(np.unique(y_pred)) == 1 and len(np.unique(y_true)) > 1)}


def mean_std(values) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (``ddof=1``; 0 for one value; ``None`` for none)."""
    values = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if values.size == 0:
        return None, None
    return float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else 0.0
