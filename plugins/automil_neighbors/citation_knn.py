"""Citation-kNN (Wang & Zucker 2000; docs/algorithms-beyond-svm.md 19): a lazy learner on the minimal Hausdorff distance
between bags, voting with a bag's references and its citers."""

from __future__ import annotations

import numbers

import numpy as np

from automil import BagClassifier, kernels

# Instance pairs per distance block: a block of whole bags against a block of whole bags is at most about
# this many doubles (128 MiB), whatever the size of the data.
_BLOCK_PAIRS = 1 << 24
HAUSDORFF = ("minimal", "maximal")


def _bag_blocks(offsets, n_rows: int):
    """Ranges ``(first bag, end bag)`` of consecutive bags holding about ``n_rows`` instances (at least one
    bag each)."""
    n_bags, lo = len(offsets) - 1, 0
    while lo < n_bags:
        hi = int(np.searchsorted(offsets, offsets[lo] + n_rows, "right")) - 1
        hi = min(max(hi, lo + 1), n_bags)
        yield lo, hi
        lo = hi


def bag_distances(X, offsets_x, Y, offsets_y, hausdorff: str = "minimal"):
    """Yield ``(lo, hi, D)`` with ``D[i, j]`` the squared Hausdorff distance between the bags ``lo..hi-1`` of X
    and every bag of Y: ``minimal``, ``min_{a in A, b in B} ||a - b||^2``, or ``maximal``,
    ``max(max_a min_b, max_b min_a) ||a - b||^2`` (docs/algorithms-beyond-svm.md 19.1).

    Squared, since only the ranks of distances matter. Cost: ``n_x n_y d`` operations for ``n_x`` and
    ``n_y`` instances of ``d`` features; memory ``O(_BLOCK_PAIRS + n_bags_x_block * n_bags_y)``.
    """
    n_y = Y.shape[0]
    for lo, hi in _bag_blocks(offsets_x, max(1, _BLOCK_PAIRS // max(n_y, 1))):
        start = offsets_x[lo]
        D = kernels.squared_distances(X[start:offsets_x[hi]], Y)
        rows, columns = offsets_x[lo:hi] - start, offsets_y[:-1]
        nearest_in_y = np.minimum.reduceat(D, columns, axis=1)  # each x's nearest in every bag of Y
        if hausdorff == "minimal":
            yield lo, hi, np.minimum.reduceat(nearest_in_y, rows, axis=0)
        else:
            nearest_in_x = np.minimum.reduceat(D, rows, axis=0)  # each y's nearest in every bag of X
            yield lo, hi, np.maximum(np.maximum.reduceat(nearest_in_y, rows, axis=0),
                                     np.maximum.reduceat(nearest_in_x, columns, axis=1))


class CitationKNN(BagClassifier):
    """Citation-kNN: a bag takes the majority label of its R nearest training bags (references) and of the
    training bags that count it among their C nearest (citers).

    The distance between bags is by default the minimal Hausdorff distance, the Euclidean distance of their
    closest pair of instances. A training bag ``b`` cites a bag ``q`` when ``q`` would be among the ``C`` nearest of
    ``b`` in the training bags without ``b`` and with ``q``, i.e. when ``d(b, q)`` is at most the ``C``-th
    smallest distance from ``b`` to another training bag (ties count for ``q``). Each reference and citer
    casts one vote for its class; the class with most votes wins, and a tie goes to the first class in
    ``classes_`` (the negative class for labels 0/1, the paper's rule).

    Cost: a fit is ``n^2 d`` for ``n`` training instances of ``d`` features (the training bags' distances,
    of which only each bag's C-th nearest is kept: ``O(N)`` memory for ``N`` bags); predicting ``m`` bags
    of ``n_test`` instances is ``n_test n d`` and ``O(m N)`` memory.

    Parameters
    ----------
    references : int, default=2
        R, the number of nearest training bags that vote (at most the number of training bags).
    citers : int, default=4
        C, the rank up to which a training bag cites its neighbours; 0 turns citers off (a bag kNN).
    hausdorff : {"minimal", "maximal"}, default="minimal"
        The bag distance: the closest pair of instances (the paper's choice on MUSK, robust to outlying
        instances), or the classic Hausdorff distance, the farthest any instance of one bag is from the
        other bag (it sees a witness that has no counterpart in the other bag; the closest pair does not,
        when both bags hold instances from one noise distribution).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    X_ : ndarray or CSR matrix of shape (n_instances, n_features)
        The training instances.
    offsets_ : ndarray of shape (n_bags + 1,)
        Where each training bag's instances start in ``X_``.
    y_ : ndarray of shape (n_bags,)
        The training bags' labels as indices into ``classes_``.
    citer_radius_ : ndarray of shape (n_bags,)
        The squared C-th smallest distance from each training bag to another one (``-inf`` for C = 0).

    References
    ----------
    J. Wang and J.-D. Zucker, "Solving the multiple-instance problem: a lazy learning approach", ICML 2000.
    """

    accepts_sparse = True

    def __init__(self, references=2, citers=4, hausdorff="minimal"):
        self.references = references
        self.citers = citers
        self.hausdorff = hausdorff

    def _check_params(self):
        for name, low in (("references", 1), ("citers", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
                raise ValueError(f"CitationKNN: {name} must be an integer >= {low}, got {value!r}")
        if self.hausdorff not in HAUSDORFF:
            raise ValueError(f"CitationKNN: hausdorff must be one of {', '.join(HAUSDORFF)}, got {self.hausdorff!r}")

    def _fit(self, bags, y):
        self._check_params()
        self.X_, self.offsets_, self.y_ = bags.X, bags.offsets, y
        n_bags, C = bags.n_bags, min(self.citers, bags.n_bags - 1)
        self.citer_radius_ = np.full(n_bags, -np.inf)
        if C == 0:
            return
        for lo, hi, D in bag_distances(bags.X, bags.offsets, bags.X, bags.offsets, self.hausdorff):
            D[np.arange(hi - lo), np.arange(lo, hi)] = np.inf  # a bag is not its own neighbour
            self.citer_radius_[lo:hi] = np.partition(D, C - 1, axis=1)[:, C - 1]

    def _votes(self, bags) -> np.ndarray:
        """Votes of references and citers for each class, shape ``(n_bags, n_classes)``."""
        votes = np.zeros((bags.n_bags, len(self.classes_)))
        one_hot = np.eye(len(self.classes_))[self.y_]
        R = min(self.references, len(self.y_))
        for lo, hi, D in bag_distances(bags.X, bags.offsets, self.X_, self.offsets_, self.hausdorff):
            nearest = np.argsort(D, axis=1, kind="stable")[:, :R]
            votes[lo:hi] = one_hot[nearest].sum(axis=1) + (D <= self.citer_radius_) @ one_hot
        return votes

    def _decision_function(self, bags):
        votes = self._votes(bags)
        return votes / votes.sum(axis=1, keepdims=True)

    def _predict_proba(self, bags):
        return self._decision_function(bags)
