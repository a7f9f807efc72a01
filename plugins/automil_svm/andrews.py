"""mi-SVM and MI-SVM, the two heuristics of Andrews, Tsochantaridis & Hofmann (NIPS 2002;
algorithms.md 5 and 6): mi-SVM relabels instances (maximum pattern margin), MI-SVM picks one witness per
positive bag (maximum bag margin). Every step is a plain SVM solved by liblinear or libsvm."""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from automil_svm.ovr import (
    CLASS_WEIGHT_PARAMETER, COMMON_PARAMETERS, SOLVER_PARAMETER, MaxInstanceMixin, OneVsRestBagSVM, bag_max,
    learner_doc,
)
from automil_svm.svm_problem import bag_examples, instance_examples

_ITERATION_PARAMETERS = """\
    max_iters : int, default=50
        Cap on the number of SVM solves; the SVM of the last solve is kept."""

_ITERATION_ATTRIBUTES = """\
    n_iter_ : ndarray of shape (n_models,)
        SVM solves made for each one-vs-rest problem.
    converged_ : ndarray of bool of shape (n_models,)
        Whether each problem reached its fixed point before ``max_iters``."""

_REFERENCE = """\
    S. Andrews, I. Tsochantaridis and T. Hofmann, "Support vector machines for multiple-instance
    learning", NIPS 2002."""


class _AndrewsSVM(MaxInstanceMixin, OneVsRestBagSVM):
    """The shared parameter and fitted attributes of the two heuristics; ``_iterate`` runs one."""

    def __init__(self, kernel="linear", C=1.0, gamma="auto", degree=3, scale_C=False, solver="auto",
                 class_weight=None, max_iters=50):
        super().__init__(kernel, C, gamma, degree, scale_C, solver, class_weight)
        self.max_iters = max_iters

    def _check_params(self, bags):
        if not isinstance(self.max_iters, numbers.Integral) or self.max_iters < 1:
            raise ValueError(f"{type(self).__name__}: max_iters must be a positive integer, "
                             f"got {self.max_iters!r}")

    def _fit(self, bags, y):
        self._runs = []
        super()._fit(bags, y)

    def _fit_binary(self, bags, t, space):
        model, n_iter, converged = self._iterate(bags, t, space)
        self._runs.append((n_iter, converged))
        return model

    def _after_fit(self):
        self.n_iter_ = np.array([n for n, _ in self._runs], dtype=np.int64)
        self.converged_ = np.array([c for _, c in self._runs], dtype=bool)
        del self._runs


def relabel_positive_bags(scores, positive, offsets):
    """mi-SVM's label update (algorithms.md 5, step 3) for the instances of the positive bags.

    ``scores`` are the instances' training decision values, ``positive`` flags the positive bags and
    ``offsets`` delimit all bags. Returns +1 where ``f(x) >= 0`` (``sign(0) = +1``), then forces each
    positive bag's arg-max instance to +1; negative-bag instances stay -1.
    """
    index = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    labels = np.where((scores >= 0) & positive[index], 1.0, -1.0)
    _, where = bag_max(scores, offsets)
    top = offsets[:-1] + where
    labels[top[positive]] = 1.0
    return labels


class MiSVM(_AndrewsSVM):
    __doc__ = learner_doc(
        """mi-SVM (lower-case mi): instance-level labels, maximum pattern margin.

    Alternates between an SVM on all instances and relabelling the instances of positive bags by the sign
    of their score (each positive bag keeps at least its best instance positive), until no label changes
    or ``max_iters`` solves (algorithms.md 5). Bag score ``max_{x in B} f(x)``; witness the arg-max.
    The instance kernel is computed once and reused by every solve.""",
        parameters=(COMMON_PARAMETERS, SOLVER_PARAMETER, CLASS_WEIGHT_PARAMETER, _ITERATION_PARAMETERS),
        attributes=(_ITERATION_ATTRIBUTES,), references=_REFERENCE)

    def _iterate(self, bags, t, space):
        index = bags.bag_index
        positive = t > 0
        C = self._example_C(self._bag_weights(t)[index], bags.n_instances)
        labels = t[index]  # step 1: instances of positive bags start positive
        for n_iter in range(1, self.max_iters + 1):
            solution = space.solve(None, labels, C)  # step 2
            new = relabel_positive_bags(space.scores(solution), positive, bags.offsets)  # step 3
            changed = np.count_nonzero(new != labels)
            labels = new
            if changed == 0:  # step 4
                return space.scorer(solution), n_iter, True
        return space.scorer(solution), self.max_iters, False


class MISVM(_AndrewsSVM):
    __doc__ = learner_doc(
        """MI-SVM (upper-case MI): bag-level, maximum bag margin; one witness per positive bag.

    Each positive bag is represented by one instance, its witness (first the bag mean, then the arg-max
    instance of the current SVM); every negative instance is an example. Solves until the witnesses stop
    changing (at least two solves) or ``max_iters`` solves (algorithms.md 6). Bag score
    ``max_{x in B} f(x)``; witness the arg-max. With ``scale_C`` the number of examples is
    ``L_n + X_p`` (negative instances plus positive bags).

    Andrews et al. give the instances of a negative bag one shared slack (a group constraint
    ``sum_{j in I} alpha_j <= C``); libsvm cannot express it, so here every negative instance has its own
    slack and bound ``[0, C]``. The two problems coincide when every negative bag is a single instance.""",
        parameters=(COMMON_PARAMETERS, SOLVER_PARAMETER, CLASS_WEIGHT_PARAMETER, _ITERATION_PARAMETERS),
        attributes=(_ITERATION_ATTRIBUTES,), references=_REFERENCE)

    def _iterate(self, bags, t, space):
        negative_rows = bags.instance_rows(np.flatnonzero(t < 0))
        positive_bags = np.flatnonzero(t > 0)
        positive_rows = bags.instance_rows(positive_bags)
        sizes = bags.sizes[positive_bags]
        n_neg, n_pos = len(negative_rows), len(positive_bags)
        targets = np.concatenate((-np.ones(n_neg), np.ones(n_pos)))
        weights = self._bag_weights(t)
        C = self._example_C(np.concatenate((weights[bags.bag_index[negative_rows]], weights[positive_bags])),
                            n_neg + n_pos)
        # Step 1: a positive bag is first represented by the mean of its instances.
        R = sp.vstack((instance_examples(negative_rows, bags.n_instances),
                       bag_examples(bags, positive_bags, 1.0 / sizes)), format="csr")
        local_offsets = np.concatenate(([0], np.cumsum(sizes)))
        selectors = None
        for n_iter in range(1, self.max_iters + 1):
            solution = space.solve(R, targets, C)  # step 2
            scores = space.scores(solution)[positive_rows]
            witnesses = positive_rows[local_offsets[:-1] + bag_max(scores, local_offsets)[1]]  # step 3
            if selectors is not None and np.array_equal(witnesses, selectors):  # step 4
                return space.scorer(solution), n_iter, True
            selectors = witnesses
            R = instance_examples(np.concatenate((negative_rows, witnesses)), bags.n_instances)
        return space.scorer(solution), self.max_iters, False

