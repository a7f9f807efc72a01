"""Instance scores to bag scores: the per-bag maximum (the MIL rule "a bag is as positive as its best
instance") and the witness, the instance that decides the bag. Shared by the instance-based learners."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["bag_max", "witness"]


@njit(cache=True, nogil=True)
def _bag_max(offsets, scores):
    n_bags, n_columns = len(offsets) - 1, scores.shape[1]
    best = np.empty((n_bags, n_columns))
    where = np.zeros((n_bags, n_columns), dtype=np.int64)
    for i in range(n_bags):
        lo = offsets[i]
        for m in range(n_columns):
            best[i, m] = scores[lo, m]
        for j in range(lo + 1, offsets[i + 1]):
            for m in range(n_columns):
                if scores[j, m] > best[i, m]:
                    best[i, m] = scores[j, m]
                    where[i, m] = j - lo
    return best, where


def bag_max(offsets, scores):
    """Per bag, the largest instance score and its position inside the bag (first on ties), for scores of
    shape ``(n_instances,)`` or ``(n_instances, K)``; the results have shape ``(n_bags,)`` or
    ``(n_bags, K)``."""
    scores = np.asarray(scores, dtype=np.float64)
    best, where = _bag_max(np.asarray(offsets, dtype=np.int64), np.ascontiguousarray(scores.reshape(len(scores), -1)))
    return (best[:, 0], where[:, 0]) if scores.ndim == 1 else (best, where)


def witness(offsets, scores) -> np.ndarray:
    """Position inside each bag of the instance with the largest score for the bag's best column
    (the predicted class when ``scores`` has one column per class)."""
    best, where = bag_max(offsets, np.asarray(scores).reshape(len(scores), -1))
    return where[np.arange(len(best)), np.argmax(best, axis=1)]
