"""Cross-validation with fixed parameters: out-of-fold predictions of one estimator, the protocol of the
accuracy checks (no tuning inside)."""

from __future__ import annotations

import numpy as np

from automil.bags import Bags
from automil.evaluation.folds import bag_folds, fold_splits
from automil.evaluation.standardized import Standardized

__all__ = ["cross_validated_predictions"]


def cross_validated_predictions(estimator, bags: Bags, n_splits: int = 10, seed: int = 0, standardize: bool = True):
    """Out-of-fold bag predictions with fixed parameters: the protocol of the accuracy checks.

    Every fold of ``bag_folds(bags.y, n_splits, seed, bags.groups)`` is predicted by ``Standardized(estimator)``
    fitted on the other folds, or by the estimator itself on the raw instances (``standardize=False``: a
    paper's protocol on raw features). Returns the predictions, the fold of every bag and the seconds spent
    fitting and predicting.
    """
    import time

    assignment = bag_folds(bags.y, n_splits, seed, bags.groups)
    predicted = np.empty(bags.n_bags, dtype=bags.y.dtype)
    start = time.perf_counter()
    for train, test in fold_splits(assignment):
        if standardize:
            predicted[test] = Standardized(estimator).fit_subset(bags, train).predict(bags.subset(test))
        else:
            predicted[test] = estimator.fit(bags.subset(train)).predict(bags.subset(test))
    return predicted, assignment, time.perf_counter() - start
