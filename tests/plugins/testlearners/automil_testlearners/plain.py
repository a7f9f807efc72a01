"""A learner written as another MIL library writes one: a plain scikit-learn estimator whose ``fit(bags, y)``
takes a list of 2-D numpy arrays (one per bag). It knows nothing of automil: no import, no base class."""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression


class MeanMaxLogistic(ClassifierMixin, BaseEstimator):
    """Logistic regression on each bag's mean and maximum instance.

    Parameters
    ----------
    C : float
        Inverse regularization strength of the logistic regression.
    """

    def __init__(self, C=1.0):
        self.C = C

    def fit(self, bags, y):
        self.model_ = LogisticRegression(C=self.C, max_iter=1000).fit(_embed(bags), y)
        self.classes_ = self.model_.classes_
        return self

    def decision_function(self, bags):
        return self.model_.decision_function(_embed(bags))

    def predict(self, bags):
        return self.model_.predict(_embed(bags))


def _embed(bags):
    """Mean and max of every bag; anything but a list of 2-D numpy arrays is refused, as such a library
    would (automil must hand it exactly that)."""
    if not isinstance(bags, list) or not all(isinstance(b, np.ndarray) and b.ndim == 2 for b in bags):
        raise TypeError(f"expected a list of 2-D numpy arrays, got {type(bags).__name__}")
    return np.array([np.concatenate([bag.mean(axis=0), bag.max(axis=0)]) for bag in bags])


def search_space(trial):
    return {"C": trial.suggest_float("C", 1e-2, 1e2, log=True)}
