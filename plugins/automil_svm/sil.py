"""SIL: single-instance learning (Ray & Craven 2005; docs/algorithms.md 4)."""

from __future__ import annotations

from automil_svm.ovr import (
    CLASS_WEIGHT_PARAMETER,
    COMMON_PARAMETERS,
    SOLVER_PARAMETER,
    THRESHOLD_PARAMETER,
    MaxInstanceMixin,
    OneVsRestBagSVM,
    learner_doc,
)


class SIL(MaxInstanceMixin, OneVsRestBagSVM):
    __doc__ = learner_doc(
        """Single-instance SVM: every instance takes its bag's label; a bag scores its best instance.

    One SVM on all n instances (``C_i = C``, or ``C / n`` with ``scale_C``); the bag score is
    ``max_{x in B} f(x)`` and the witness is that instance. Instances of positive bags that are really
    negative become label noise, which pulls the model toward the positive class on large bags.""",
        parameters=(COMMON_PARAMETERS, SOLVER_PARAMETER, CLASS_WEIGHT_PARAMETER, THRESHOLD_PARAMETER),
        references="""\
    S. Ray and M. Craven, "Supervised versus multiple instance learning: an empirical comparison",
    ICML 2005.""")

    def __init__(self, kernel="linear", C=1.0, gamma="auto", degree=3, scale_C=False, solver="auto",
                 class_weight=None, threshold="fit"):
        super().__init__(kernel, C, gamma, degree, scale_C, solver, class_weight)
        self.threshold = threshold

    def _fit_binary(self, bags, t, space):
        # Algorithms.md 4: instances inherit their bag's target and weight.
        index = bags.bag_index
        C = self._example_C(self._bag_weights(t)[index], bags.n_instances)
        return space.scorer(space.solve(None, t[index], C))
