"""The regression learner contract: one continuous value per bag (a biomarker's level, a score)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from automil.bags import Bags
from automil.endpoints import LabelError, regression_labels, task_of
from automil.learner import BagInput, labelled

__all__ = ["BagRegressor", "regression_targets"]


class BagRegressor(BagInput, RegressorMixin, BaseEstimator):
    """Base class of a learner that predicts a value per bag: the labels are checked once, here.

    A subclass stores its parameters in ``__init__`` (nothing else) and implements ``_fit(bags, target)``
    (``target`` finite floats, one per bag) and ``_predict(bags)`` (shape ``(n_bags,)``).

    The labels are regression labels (``automil.endpoints.regression_labels(target)``: a structured array with the
    field ``target``) or a plain numeric array. Sparse and streamed bags: see
    :class:`~automil.learner.BagInput`.
    """

    task = "regression"

    def fit(self, bags, y=None):
        """Fit on bags (``Bags`` or a list of 2-D arrays) and their targets; returns ``self``."""
        bags = self._fitting_bags(bags, y)
        target = regression_targets(bags.y, bags)
        self.n_features_in_ = bags.n_features
        self._fit(bags, target)
        return self

    def predict(self, bags) -> np.ndarray:
        """The predicted value of each bag, shape ``(n_bags,)``."""
        bags = self._check_predict(bags)
        return self._bag_values(self._predict(bags), "_predict", bags)

    def score(self, bags, y, sample_weight=None) -> float:
        """R^2 of the predictions (scikit-learn's ``r2_score``), ``y`` as ``fit`` takes it."""
        return super().score(bags, regression_targets(y), sample_weight)


def regression_targets(y, bags: Bags | None = None) -> np.ndarray:
    """The float targets of regression labels or of plain numbers, checked as
    :func:`~automil.endpoints.regression_labels` checks them: an error names the first bad bag."""
    y = np.asarray(y)
    task = task_of(y)
    if task == "survival" or (task == "classification" and (y.dtype.names or y.ndim != 1)):
        raise ValueError(f"a regressor needs regression labels (the field 'target': "
                         f"automil.endpoints.regression_labels(target)) or one number per bag, got labels of "
                         f"dtype {y.dtype} and shape {y.shape}")
    try:
        return regression_labels(y["target"] if task == "regression" else y)["target"]
    except LabelError as error:
        raise ValueError(labelled(error, bags)) from None
