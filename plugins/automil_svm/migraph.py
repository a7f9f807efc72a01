"""miGraph: an SVM on bags with the graph kernel over each bag's epsilon-graph (Zhou, Sun & Li 2009;
docs/algorithms.md 20)."""

from __future__ import annotations

import numpy as np
from numba import njit

from automil import kernels
from automil_svm.nsk import NSK
from automil_svm.ovr import (
    CLASS_WEIGHT_PARAMETER,
    COMMON_PARAMETERS,
    SOLVER_PARAMETER,
    OneVsRestBagSVM,
    learner_doc,
)


@njit(cache=True, nogil=True)
def _gaussian_distance(X, a, b, gamma):
    s = 0.0
    for k in range(X.shape[1]):
        diff = X[a, k] - X[b, k]
        s += diff * diff
    return 1.0 - np.exp(-gamma * s)


@njit(cache=True, nogil=True)
def _clique_weights(X, offsets, gamma):
    """``W_a / sum_{a' in B} W_a'`` for every instance a of every bag B, where ``W_a = 1 / deg(a)`` and
    ``deg(a)`` counts the instances (a itself included) whose Gaussian distance ``1 - exp(-gamma ||a - a'||^2)``
    to a is below the bag's mean distance between two of its instances (20.1-20.2). Two passes over each
    bag's pairs, so memory stays O(n_instances): ``sum_B |B|^2 d`` operations."""
    alpha = np.ones(X.shape[0])
    for bag in range(len(offsets) - 1):
        lo, hi = offsets[bag], offsets[bag + 1]
        m = hi - lo
        if m == 1:
            continue
        total = 0.0
        for a in range(lo, hi):
            for b in range(a + 1, hi):
                total += _gaussian_distance(X, a, b, gamma)
        delta = total / (m * (m - 1) / 2)
        for a in range(lo, hi):
            for b in range(a + 1, hi):
                if _gaussian_distance(X, a, b, gamma) < delta:
                    alpha[a] += 1.0
                    alpha[b] += 1.0
        weight_sum = 0.0
        for a in range(lo, hi):
            alpha[a] = 1.0 / alpha[a]
            weight_sum += alpha[a]
        for a in range(lo, hi):
            alpha[a] /= weight_sum
    return alpha


class MiGraph(NSK):
    __doc__ = learner_doc(
        """miGraph: bags are the examples, with a kernel that lets the instances of a bag depend on each other.

    Each bag B is an epsilon-graph: two instances are linked when their Gaussian distance
    ``1 - exp(-gamma ||x - x'||^2)`` is below the bag's mean distance between two of its instances. An
    instance in a clique of c linked instances weighs ``W_a = 1 / deg(a)`` (about 1/c), so a clique counts
    about as one instance, and the kernel is
    ``k_g(A, B) = sum_{a, b} W_a W_b k(a, b) / (sum_a W_a sum_b W_b)`` with the instance kernel ``k``
    (docs/algorithms.md 20); ``gamma_`` is the width of both. It is NSK with per-instance weights in place
    of the set kernel's per-bag normalizer: linear in each bag's instances, so the fitted function is an
    instance expansion ``g`` scored as ``f(B) = sum_{x in B} alpha_x g(x) + b`` with
    ``alpha_x = W_x / sum W``.

    Cost: the weights take ``sum_B |B|^2 d`` operations; the SVM is NSK's (the instance kernel over the
    training instances reduced to the bag kernel block by block with ``smo``, linear in instances with the
    linear kernel and ``cd``).""",
        parameters=(COMMON_PARAMETERS.replace('default="linear"', 'default="rbf"').replace(
            "C : float, default=1.0", "C : float, default=10.0"),
                    SOLVER_PARAMETER, CLASS_WEIGHT_PARAMETER),
        references="""\
    Z.-H. Zhou, Y.-Y. Sun and Y.-F. Li, "Multi-instance learning by treating instances as non-I.I.D.
    samples", ICML 2009.""")

    accepts_sparse = False

    def __init__(self, kernel="rbf", C=10.0, gamma="auto", degree=3, scale_C=False, solver="auto",
                 class_weight=None):
        OneVsRestBagSVM.__init__(self, kernel, C, gamma, degree, scale_C, solver, class_weight)  # no normalization

    def _check_params(self, bags):
        """No parameters beyond the family's."""

    def _instance_weights(self, bags) -> np.ndarray:
        return _clique_weights(np.ascontiguousarray(bags.X, dtype=np.float64), bags.offsets, self.gamma_)

    def _begin_fit(self, bags):
        examples = kernels.bag_matrix(bags.offsets)
        examples.data = self._instance_weights(bags)
        self._examples = examples

    def _decision_function(self, bags):
        alpha = self._instance_weights(bags)
        scores = np.column_stack([np.add.reduceat(alpha * model.raw(bags.X), bags.offsets[:-1]) + model.b
                                  for model in self.models_])
        return scores[:, 0] if len(self.classes_) == 2 else scores
