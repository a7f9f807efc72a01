"""The base of the SVM family: shared parameters, one-vs-rest over classes (docs/algorithms.md 1.4) and the
maximum-instance bag score with its witness.

For K = 2 one model is trained with ``classes_[1]`` positive and ``decision_function`` is ``[-f, f]``;
for K > 2 model k treats the bags of class k as positive and the prediction is the arg-max score.
"""

from __future__ import annotations

import numbers

import numpy as np

from automil import BagClassifier, bag_max, kernels, witness
from automil_svm.svm_problem import SOLVERS, TrainingKernel


def bag_mean(scores, offsets) -> np.ndarray:
    return np.add.reduceat(scores, offsets[:-1]) / np.diff(offsets)


def best_cut(scores, t) -> float:
    """The cut on training bag scores with the best bag accuracy (``score > cut`` is positive, ``t`` in
    {-1, +1}); among equally good cuts the middle one. One sort: a cut after the i lowest scores is right
    on the negatives below it and the positives above it."""
    order = np.argsort(scores, kind="stable")
    s, positive = scores[order], t[order] > 0
    correct = (np.concatenate(([0], np.cumsum(~positive)))
               + positive.sum() - np.concatenate(([0], np.cumsum(positive))))
    cuts = np.concatenate(([s[0] - 1.0], (s[:-1] + s[1:]) / 2, [s[-1] + 1.0]))
    between_values = np.concatenate(([True], s[:-1] < s[1:], [True]))
    best = cuts[between_values & (correct == correct[between_values].max())]
    return float(best[(len(best) - 1) // 2])


class OneVsRestBagSVM(BagClassifier):
    """Shared machinery; subclasses implement ``_fit_binary(bags, t, space) -> model`` and
    ``_bag_scores(model, bags)``. Instance-based subclasses also get ``_witness`` and ``_instance_scores`` from
    :class:`MaxInstanceMixin`."""

    accepts_sparse = True
    # One set of examples for every solve of a fit and no instance scores (NSK, miGraph): the instance kernel
    # is reduced to the examples' block by block and never held (svm_problem.TrainingKernel).
    _fixed_examples = False

    def __init__(self, kernel="linear", C=1.0, gamma="auto", degree=3, scale_C=False, solver="auto",
                 class_weight=None):
        self.kernel = kernel
        self.C = C
        self.gamma = gamma
        self.degree = degree
        self.scale_C = scale_C
        self.solver = solver
        self.class_weight = class_weight

    # ---- parameters --------------------------------------------------------------------------------
    def _check_common_params(self, n_features: int):
        name = type(self).__name__
        if self.kernel not in kernels.INSTANCE_KERNELS:
            raise ValueError(f"{name}: kernel must be one of {', '.join(kernels.INSTANCE_KERNELS)}, "
                             f"got {self.kernel!r}")
        if not isinstance(self.C, numbers.Real) or not self.C > 0 or not np.isfinite(self.C):
            raise ValueError(f"{name}: C must be a positive number, got {self.C!r}")
        if self.solver not in SOLVERS:
            raise ValueError(f"{name}: solver must be one of {', '.join(SOLVERS)}, got {self.solver!r}")
        if self.solver == "cd" and self.kernel != "linear":
            raise ValueError(f"{name}: solver='cd' works on explicit features: it needs kernel='linear', "
                             f"got kernel={self.kernel!r}")
        if not isinstance(self.degree, numbers.Integral) or self.degree < 1:
            raise ValueError(f"{name}: degree must be a positive integer, got {self.degree!r}")
        if getattr(self, "class_weight", None) not in (None, "balanced"):
            raise ValueError(f"{name}: class_weight must be None or 'balanced', got {self.class_weight!r}")
        threshold = getattr(self, "threshold", 0.0)
        if threshold != "fit" and not (isinstance(threshold, numbers.Real) and np.isfinite(threshold)):
            raise ValueError(f"{name}: threshold must be 'fit' or a finite number, got {threshold!r}")
        try:
            gamma = kernels.resolve_gamma(self.gamma, n_features)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None
        return gamma

    def _check_params(self, bags):
        """Learner-specific validation; extend in subclasses."""

    # ---- one-vs-rest -------------------------------------------------------------------------------
    def _fit(self, bags, y):
        gamma = self._check_common_params(bags.n_features)
        self._check_params(bags)
        self.gamma_ = gamma
        space = TrainingKernel(self._training_points(bags), self.kernel, gamma, self.degree, self.solver,
                               keep_gram=not self._fixed_examples)
        targets = [np.where(y == 1, 1.0, -1.0)] if len(self.classes_) == 2 else \
            [np.where(y == k, 1.0, -1.0) for k in range(len(self.classes_))]
        self._begin_fit(bags)
        self.models_ = [self._fit_binary(bags, t, space) for t in targets]
        self._end_fit()
        for model, t in zip(self.models_, targets):  # the bag rule's cut becomes 0 of the decision function
            threshold = getattr(self, "threshold", 0.0)
            model.b -= best_cut(self._bag_scores(model, bags), t) if threshold == "fit" else threshold

    def _training_points(self, bags):
        """Hook: the points the fitted functions expand over, the training instances first (a learner
        may append points that are no combination of them, e.g. MI-SVM's starting points)."""
        return bags.X

    def _begin_fit(self, bags):
        """Hook: state shared by the one-vs-rest problems of one fit (parameters are checked)."""

    def _end_fit(self):
        """Hook: fitted attributes that summarize the per-class models (e.g. ``n_iter_``)."""

    def _decision_function(self, bags):
        scores = np.column_stack([self._bag_scores(model, bags) for model in self.models_])
        return scores[:, 0] if len(self.classes_) == 2 else scores

    # ---- helpers for subclasses --------------------------------------------------------------------
    def _bag_weights(self, t) -> np.ndarray:
        """Per-bag weight of the binary problem: 1, or with ``class_weight='balanced'`` the bag-count
        balancing ``N / (2 N_class)`` (scikit-learn's formula) of the bag's side."""
        if getattr(self, "class_weight", None) != "balanced":
            return np.ones(len(t))
        n_pos = np.count_nonzero(t > 0)
        return np.where(t > 0, len(t) / (2.0 * n_pos), len(t) / (2.0 * (len(t) - n_pos)))

    def _example_C(self, weights, n_examples: int) -> np.ndarray:
        """Per-example bounds ``C_i = C * weight_i``, divided by the number of examples with scale_C
        (docs/algorithms.md 1.8)."""
        C = self.C / n_examples if self.scale_C else self.C
        return C * np.asarray(weights, dtype=np.float64)


class MaxInstanceMixin:
    """Bag score ``max_{x in B} f(x)`` of an instance scorer; the witness is the arg-max instance of the
    model of the predicted class (the one model for K = 2)."""

    def _bag_scores(self, model, bags):
        return bag_max(bags.offsets, model(bags.X))[0]

    def _instance_scores(self, bags):
        """``f(x)`` of every instance: one column per class model (the positive class's margin for K = 2)."""
        scores = np.column_stack([model(bags.X) for model in self.models_])
        return scores[:, 0] if len(self.classes_) == 2 else scores

    def _witness(self, bags):
        return witness(bags.offsets, self._instance_scores(bags))


# numpydoc text of the parameters every learner of the family shares (composed into each class docstring).
COMMON_PARAMETERS = """\
    kernel : {"linear", "rbf", "poly"}, default="linear"
        Instance kernel (docs/algorithms.md 1.7, :mod:`automil.kernels`).
    C : float, default=1.0
        Per-example bound of the SVM dual, libsvm's convention (docs/algorithms.md 1.8).
    gamma : float or "auto", default="auto"
        RBF width; "auto" is ``1 / n_features``.
    degree : int, default=3
        Degree of the polynomial kernel ``(1 + x.x')^degree``.
    scale_C : bool, default=False
        Divide C by the number of examples of the SVM problem (misvm's convention)."""

SOLVER_PARAMETER = """\
    solver : {"auto", "cd", "smo"}, default="auto"
        "cd": dual coordinate descent on explicit features (liblinear; linear kernel only; the bias is
        the weight of a constant feature and so is regularized; stops at scikit-learn's LinearSVC
        defaults, a projected-gradient gap of 1e-4 or 1000 epochs, whichever comes first). "smo": SMO on
        a precomputed kernel (libsvm; exact unregularized bias; a dense n x n kernel). "auto": "cd" for
        the linear kernel, else "smo"."""

CLASS_WEIGHT_PARAMETER = """\
    class_weight : {None, "balanced"}, default=None
        "balanced" weights the examples of each binary problem by ``N / (2 N_side)`` of the bag counts of
        their bag's side (not in the reference implementations; off by default)."""

THRESHOLD_PARAMETER = """\
    threshold : "fit" or float, default="fit"
        The cut on the bag score above which a bag is positive, subtracted from the decision function so
        that the arg-max rule applies it. "fit" takes the cut with the best accuracy on the training bags
        (the middle one among ties): the published rule, a cut at 0, calls every bag positive (SIL) or
        negative (sMIL) on data sets whose positive bags hold few positive instances (digits-bags, the RBF
        kernel on musk1 ... tiger; docs/accuracy-svm.md). ``threshold=0.0`` is the published rule."""


BASE_ATTRIBUTES = """\
    classes_ : ndarray of shape (n_classes,)
    models_ : list of InstanceScorer
        One fitted function per one-vs-rest problem (one for two classes).
    gamma_ : float
        The RBF width used."""


def learner_doc(summary: str, *, parameters, attributes=(), references: str) -> str:
    """A numpydoc class docstring from the shared blocks above and the learner's own text."""
    return "\n\n".join((
        summary.rstrip(),
        "    Parameters\n    ----------\n" + "\n".join(parameters),
        "    Attributes\n    ----------\n" + "\n".join((BASE_ATTRIBUTES, *attributes)),
        "    References\n    ----------\n" + references,
    )) + "\n"
