"""An embedded-space MIL baseline: each bag becomes the mean and the max of its instances."""

import numpy as np
from sklearn.linear_model import LogisticRegression

from automil import BagClassifier


class EmbeddedMeanMax(BagClassifier):
    """Logistic regression on per-bag mean and max embeddings.

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularization strength of the logistic regression.
    """

    def __init__(self, C=1.0):
        self.C = C

    def _fit(self, bags, y):
        self.model_ = LogisticRegression(C=self.C, max_iter=1000).fit(embed(bags), y)

    def _decision_function(self, bags):
        return self.model_.predict_proba(embed(bags))

    def _predict_proba(self, bags):
        return self.model_.predict_proba(embed(bags))


def embed(bags):
    """Per-bag mean and max of the instances, vectorized with reduceat over the bag offsets."""
    starts = bags.offsets[:-1]
    mean = np.add.reduceat(bags.X, starts, axis=0) / bags.sizes[:, None]
    return np.hstack((mean, np.maximum.reduceat(bags.X, starts, axis=0)))
