"""NSK: an SVM on bags with the normalized set kernel (Gärtner et al. 2002; docs/algorithms.md 7)."""

from __future__ import annotations

import numpy as np

from automil import kernels
from automil_svm.ovr import (
    CLASS_WEIGHT_PARAMETER,
    COMMON_PARAMETERS,
    SOLVER_PARAMETER,
    OneVsRestBagSVM,
    learner_doc,
)


class NSK(OneVsRestBagSVM):
    __doc__ = learner_doc(
        """Normalized set kernel SVM: bags are the examples; bag-level, so no witness.

    ``k_set(A, B) = sum_{a in A, b in B} k(a, b) / (nu(A) nu(B))`` (docs/algorithms.md 1.7) and
    ``f(B) = sum_i alpha_i t_i k_set(B_i, B) + b``. Because ``k_set`` is linear in each bag's instances,
    the fitted function is kept as an instance expansion ``g`` and scored as
    ``f(B) = sum_{x in B} g(x) / nu(B) + b``. With the linear kernel and the ``cd`` solver the examples
    are the explicit normalized bag sums (bag means for ``averaging``), a linear SVM on N vectors. With
    ``scale_C`` the number of examples is the number of bags.""",
        parameters=(COMMON_PARAMETERS, SOLVER_PARAMETER, CLASS_WEIGHT_PARAMETER, """\
    normalization : {"none", "averaging", "featurespace"}, default="averaging"
        ``nu(A)``: 1 (misvm's default, biased toward large bags), ``|A|`` (a normalized set kernel), or
        ``sqrt(k_set_none(A, A))`` (Gärtner's; a bag with a zero self-sum gets a zero kernel row and a
        warning)."""),
        references="""\
    T. Gärtner, P. A. Flach, A. Kowalczyk and A. J. Smola, "Multi-instance kernels", ICML 2002.""")

    _fixed_examples = True

    def __init__(self, kernel="linear", C=1.0, gamma="auto", degree=3, scale_C=False, solver="auto",
                 class_weight=None, normalization="averaging"):
        super().__init__(kernel, C, gamma, degree, scale_C, solver, class_weight)
        self.normalization = normalization

    def _check_params(self, bags):
        if self.normalization not in kernels.NORMALIZATIONS:
            raise ValueError(f"NSK: normalization must be one of {', '.join(kernels.NORMALIZATIONS)}, "
                             f"got {self.normalization!r}")

    def _normalizer(self, bags) -> np.ndarray:
        return kernels.set_normalizer(bags.X, bags.offsets, self.normalization, kernel=self.kernel,
                                      gamma=self.gamma_, degree=self.degree)

    def _begin_fit(self, bags):
        # Every one-vs-rest problem has the same examples: the normalized bag sums.
        self._examples = kernels.bag_matrix(bags.offsets, 1.0 / self._normalizer(bags))

    def _end_fit(self):
        del self._examples

    def _fit_binary(self, bags, t, space):
        C = self._example_C(self._bag_weights(t), bags.n_bags)
        return space.scorer(space.solve(self._examples, t, C))

    def _decision_function(self, bags):
        nu = self._normalizer(bags)  # once for all one-vs-rest models
        scores = np.column_stack([np.add.reduceat(model.raw(bags.X), bags.offsets[:-1]) / nu + model.b
                                  for model in self.models_])
        return scores[:, 0] if len(self.classes_) == 2 else scores
