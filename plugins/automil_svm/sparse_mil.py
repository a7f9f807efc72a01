"""sMIL and sbMIL, SVMs for sparse positive bags (Bunescu & Mooney, ICML 2007; docs/algorithms.md 8 and 9)."""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from automil_svm.ovr import (
    CLASS_WEIGHT_PARAMETER,
    COMMON_PARAMETERS,
    SOLVER_PARAMETER,
    THRESHOLD_PARAMETER,
    MaxInstanceMixin,
    OneVsRestBagSVM,
    bag_mean,
    learner_doc,
)
from automil_svm.svm_problem import bag_examples, instance_examples

_SOLVER_NOTE = """\
        sMIL's step has per-example margins, so "cd" and "smo" are automil's own numba solvers
        (:mod:`automil_svm.margin_solvers`), not liblinear and libsvm."""

_SMIL_PARAMETERS = """\
    kernel : {"linear", "rbf", "poly"}, default="linear"
    C : float, default=1.0
        Split as ``C / L_n`` over the negative instances and ``C / X_p`` over the positive bags.
    gamma : float or "auto", default="auto"
        RBF width; "auto" is ``1 / n_features``.
    degree : int, default=3"""

_REFERENCE = """\
    R. C. Bunescu and R. J. Mooney, "Multiple instance learning for sparse positive bags", ICML 2007."""


def positive_bag_margins(sizes) -> np.ndarray:
    """sMIL's margin ``rho = 2/|X| - 1`` of a positive bag mean (docs/algorithms.md 8): 1 for a single
    instance, 0 for two, negative beyond."""
    return 2.0 / np.asarray(sizes, dtype=np.float64) - 1.0


def fit_smil(bags, t, space, C: float):
    """Solve sMIL's problem (docs/algorithms.md 8) for bag targets ``t`` in {-1, +1}.

    Examples: every negative instance (margin 1, bound ``C / L_n``) and every positive bag's mean (margin
    ``2/|X| - 1``, bound ``C / X_p``): a mean can reach that margin when one instance scores +1 and the
    others -1.
    """
    negative_rows = bags.instance_rows(np.flatnonzero(t < 0))
    positive_bags = np.flatnonzero(t > 0)
    sizes = bags.sizes[positive_bags].astype(np.float64)
    n_neg, n_pos = len(negative_rows), len(positive_bags)
    R = sp.vstack((instance_examples(negative_rows, bags.n_instances),
                   bag_examples(bags, positive_bags, 1.0 / sizes)), format="csr")
    targets = np.concatenate((-np.ones(n_neg), np.ones(n_pos)))
    rho = np.concatenate((np.ones(n_neg), positive_bag_margins(sizes)))
    bounds = np.concatenate((np.full(n_neg, C / n_neg), np.full(n_pos, C / n_pos)))
    return space.solve(R, targets, bounds, rho=rho)


class SMIL(MaxInstanceMixin, OneVsRestBagSVM):
    __doc__ = learner_doc(
        """sMIL: positive bags enter as their instance mean with the relaxed margin ``2/|X| - 1``.

    Negative instances must score at most -1; a positive bag's mean must reach ``(2 - |X|)/|X|``, which
    holds when a single instance is positive (the sparse-bag assumption). The costs are divided by the
    class counts, ``C / L_n`` and ``C / X_p``, as in the original objective (so there is no ``scale_C``
    and no ``class_weight``). The trained function scores instances; ``bag_score="max"`` (default) takes
    the best instance (witness: the arg-max), ``"mean"`` the mean instance score (misvm's set-kernel rule,
    docs/algorithms.md 16.8).""",
        parameters=(_SMIL_PARAMETERS, SOLVER_PARAMETER, _SOLVER_NOTE, """\
    bag_score : {"max", "mean"}, default="max"
        How the instance scores of a bag become its score.""", THRESHOLD_PARAMETER),
        references=_REFERENCE)

    def __init__(self, kernel="linear", C=1.0, gamma="auto", degree=3, solver="auto", bag_score="max",
                 threshold="fit"):
        self.kernel = kernel
        self.C = C
        self.gamma = gamma
        self.degree = degree
        self.solver = solver
        self.bag_score = bag_score
        self.threshold = threshold

    def _check_params(self, bags):
        if self.bag_score not in ("max", "mean"):
            raise ValueError(f"SMIL: bag_score must be 'max' or 'mean', got {self.bag_score!r}")

    def _fit_binary(self, bags, t, space):
        return space.scorer(fit_smil(bags, t, space, self.C))

    def _bag_scores(self, model, bags):
        if self.bag_score == "mean":
            return bag_mean(model(bags.X), bags.offsets)
        return super()._bag_scores(model, bags)


class SBMIL(MaxInstanceMixin, OneVsRestBagSVM):
    __doc__ = learner_doc(
        """sbMIL: sMIL, then an instance SVM with the top ``eta`` fraction of positive-bag instances positive.

    Stage 1 trains sMIL (same C and kernel) and scores every instance of the positive bags; the
    ``n_pos = round(eta * L_p)`` best (at least one per positive bag, ``X_p``, at most ``L_p``; ties may add
    more) become positive, all others negative. Stage 2 is a plain SVM on all instances with these labels
    (``C_i = C``, or ``C / n`` with ``scale_C``; ``class_weight`` applies here, since sMIL already
    balances its classes). Bag score ``max_{x in B} f(x)``; witness the arg-max.""",
        parameters=(COMMON_PARAMETERS, SOLVER_PARAMETER, _SOLVER_NOTE, CLASS_WEIGHT_PARAMETER, """\
    eta : float in [0, 1], default=0.1
        Expected fraction of positive instances in positive bags (misvm's default 0.0; its example 0.1).
    threshold : "fit" or float, default=0.0
        The cut on the bag score above which a bag is positive, as SIL's and sMIL's, but the published
        cut at 0 by default: fitting it on the training bags (their default) did not help sbMIL on the
        sets not reported in docs/accuracy-svm.md (experiments/default_choices.py)."""),
        references=_REFERENCE)

    def __init__(self, kernel="linear", C=1.0, gamma="auto", degree=3, scale_C=False, solver="auto",
                 class_weight=None, eta=0.1, threshold=0.0):
        super().__init__(kernel, C, gamma, degree, scale_C, solver, class_weight)
        self.eta = eta
        self.threshold = threshold

    def _check_params(self, bags):
        if not isinstance(self.eta, numbers.Real) or not 0.0 <= self.eta <= 1.0:
            raise ValueError(f"SBMIL: eta must be a number in [0, 1], got {self.eta!r}")

    def _fit_binary(self, bags, t, space):
        index = bags.bag_index
        in_positive = t[index] > 0
        scores = space.scores(fit_smil(bags, t, space, self.C))[in_positive]  # steps 1-2
        n_positive_bags = np.count_nonzero(t > 0)
        n_pos = min(len(scores), max(n_positive_bags, int(round(self.eta * len(scores)))))  # step 3
        cutoff = np.partition(scores, len(scores) - n_pos)[len(scores) - n_pos]  # step 4
        labels = -np.ones(bags.n_instances)
        labels[np.flatnonzero(in_positive)[scores >= cutoff]] = 1.0
        C = self._example_C(self._bag_weights(t)[index], bags.n_instances)
        return space.scorer(space.solve(None, labels, C))  # step 5
