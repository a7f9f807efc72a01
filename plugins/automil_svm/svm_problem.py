"""The soft-margin SVM sub-problem every learner of the family solves (docs/algorithms.md 1.8), over examples
that are linear combinations of the training instances, and the instance scorer it produces.

An example (an instance, a bag mean, a normalized bag sum, a selected witness) is one row of a sparse
matrix ``R`` over the training instances. Whatever the kernel, the fitted function is therefore an
expansion over training instances, ``f(x) = sum_j beta_j k(x_j, x) + b`` with ``beta = R^T (alpha * t)``,
and for the linear kernel the explicit ``w = X^T beta``. Standard SVM steps go to scikit-learn's
liblinear (linear kernel) or libsvm (precomputed kernel); steps with per-example margins ``rho`` go to
the numba solvers of :mod:`automil_svm.margin_solvers`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC, LinearSVC

from automil import kernels
from automil_svm import margin_solvers

SOLVERS = ("auto", "cd", "smo")
# A dense kernel over more training instances than this would not fit next to other work on a laptop.
MAX_GRAM_BYTES = 4 * 1024**3
LIBLINEAR_TOL = 1e-4
LIBLINEAR_MAX_ITER = 1000


def dense_gram_refusal(n: int, kernel: str, solver: str) -> str | None:
    """Why a kernel SVM on ``n`` training instances cannot hold its dense instance kernel, or ``None``."""
    need = 8 * n * n
    if need <= MAX_GRAM_BYTES:
        return None
    return (f"kernel={kernel!r} with solver={solver!r} needs a dense {n} x {n} kernel matrix "
            f"({need / 1024**3:.1f} GiB, more than {MAX_GRAM_BYTES / 1024**3:.0f} GiB): use the linear kernel "
            "with solver='cd' on this many instances")


@dataclass
class InstanceScorer:
    """A fitted instance function ``f(x) = w.x + b`` (linear) or ``sum_j beta_j k(u_j, x) + b``.

    Only the training instances with ``beta_j != 0`` (the support instances ``U``) are kept.
    """

    kernel: str
    gamma: float
    degree: int
    b: float
    w: np.ndarray | None = None
    U: object = None
    beta: np.ndarray | None = None

    def raw(self, X) -> np.ndarray:
        """``f(x) - b`` for every row of X (dense or CSR)."""
        if self.w is not None:
            return np.asarray(X @ self.w).ravel()
        out = np.empty(X.shape[0])
        for lo, hi in kernels.row_blocks(X.shape[0], self.U.shape[0]):  # bounded memory: a block of cells at a time
            out[lo:hi] = kernels.pairwise_kernel(X[lo:hi], self.U, self.kernel, gamma=self.gamma,
                                                 degree=self.degree) @ self.beta
        return out

    def __call__(self, X) -> np.ndarray:
        return self.raw(X) + self.b


@dataclass
class Solution:
    """One solved SVM: ``beta`` over all training instances (kernel) or ``w`` (linear), and the bias."""

    b: float
    w: np.ndarray | None = None
    beta: np.ndarray | None = None


class TrainingKernel:
    """The training instances with one instance kernel; solves SVMs over combinations of them.

    The dense instance kernel (needed by libsvm on precomputed kernels) is computed once, on first use,
    and shared by every SVM of a fit (every mi-SVM / MI-SVM iteration, every one-vs-rest class). A fit whose
    examples never change and that never scores its instances (NSK, miGraph: ``keep_gram=False``) reduces it
    block by block instead and never holds it: it would be used once, at ``8 n^2`` bytes (3.2 GB at 20,000
    instances).
    """

    def __init__(self, X, kernel: str, gamma: float, degree: int, solver: str, keep_gram: bool = True):
        self.X = X
        self.keep_gram = keep_gram
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.solver = "cd" if solver == "auto" and kernel == "linear" else solver
        if self.solver == "auto":
            self.solver = "smo"
        self._gram = None
        self._last_examples = self._last_gram = None  # see example_gram

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def gram(self) -> np.ndarray:
        """The ``n x n`` instance kernel, cached."""
        if self._gram is None:
            refusal = dense_gram_refusal(self.n, self.kernel, self.solver)
            if refusal is not None:
                raise ValueError(refusal)
            self._gram = kernels.pairwise_kernel(self.X, self.X, self.kernel, gamma=self.gamma,
                                                 degree=self.degree)
        return self._gram

    def _params(self) -> dict:
        return dict(kernel=self.kernel, gamma=self.gamma, degree=self.degree)

    def example_gram(self, R) -> np.ndarray:
        """``R K R^T``; ``R = None`` means every instance is an example. From the cached instance kernel
        when it is kept and fits in memory (every later solve and score of the fit reuses it), else block by
        block; the same ``R`` again (NSK's one-vs-rest classes) returns the same matrix."""
        if R is None:
            return self.gram
        if R is not self._last_examples:
            if self.keep_gram and 8 * self.n * self.n <= MAX_GRAM_BYTES:
                self._last_gram = np.asarray(R @ (R @ self.gram).T)
            else:
                self._last_gram = kernels.combination_gram(self.X, R, **self._params())
            self._last_examples = R
        return self._last_gram

    def solve(self, R, t, C, rho=None) -> Solution:
        """Solve 1.8 for examples ``R`` (sparse ``m x n``, or None for the instances), targets ``t`` in
        {-1, +1}, per-example bounds ``C`` and margins ``rho`` (1 when None)."""
        t = np.asarray(t, dtype=np.float64)
        C = np.asarray(C, dtype=np.float64)
        if self.solver == "cd":
            Z = self.X if R is None else R @ self.X
            if rho is None:
                # C=1 with sample weights C_i: liblinear's per-example bound is C * weight.
                svm = LinearSVC(C=1.0, loss="hinge", dual=True, tol=LIBLINEAR_TOL, max_iter=LIBLINEAR_MAX_ITER,
                                random_state=0)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    svm.fit(Z, t, sample_weight=C)
                return Solution(b=float(svm.intercept_[0]), w=svm.coef_[0].copy())
            w, b, _, _ = margin_solvers.dual_cd(Z, t, rho, C)
            return Solution(b=b, w=w)
        G = self.example_gram(R)
        coef = np.zeros(len(t))
        if rho is None:
            svm = SVC(kernel="precomputed", C=1.0, tol=1e-3)
            svm.fit(G, t, sample_weight=C)
            coef[svm.support_] = svm.dual_coef_[0]
            b = float(svm.intercept_[0])
        else:
            alpha, b, _ = margin_solvers.smo(G, t, rho, C)
            coef = alpha * t
        beta = coef if R is None else np.asarray(R.T @ coef).ravel()
        if self.kernel == "linear":
            return Solution(b=b, w=np.asarray(self.X.T @ beta).ravel())
        return Solution(b=b, beta=beta)

    def scores(self, solution: Solution) -> np.ndarray:
        """``f(x)`` on every training instance (reuses the cached kernel)."""
        if solution.w is not None:
            return np.asarray(self.X @ solution.w).ravel() + solution.b
        return self.gram @ solution.beta + solution.b

    def objective(self, solution: Solution, R, t, C) -> float:
        """The primal objective ``1/2 ||w||^2 + sum_i C_i max(0, 1 - t_i f(z_i))`` of a solution over the
        examples ``R`` (None: the instances) with targets ``t``."""
        raw = self.scores(solution) - solution.b
        f = (raw if R is None else np.asarray(R @ raw).ravel()) + solution.b
        if solution.w is not None:
            norm = solution.w @ solution.w
        else:
            norm = solution.beta @ self.gram @ solution.beta
        return 0.5 * float(norm) + float(np.asarray(C) @ np.maximum(0.0, 1.0 - np.asarray(t) * f))

    def scorer(self, solution: Solution) -> InstanceScorer:
        """The fitted function, keeping only the support instances."""
        if solution.w is not None:
            return InstanceScorer(self.kernel, self.gamma, self.degree, solution.b, w=solution.w)
        support = np.flatnonzero(solution.beta)
        U = self.X[support]
        return InstanceScorer(self.kernel, self.gamma, self.degree, solution.b,
                              U=U if sp.issparse(U) else np.ascontiguousarray(U), beta=solution.beta[support])


def instance_examples(rows, n_instances: int) -> sp.csr_matrix:
    """Examples that are single training instances (``rows``), as rows of ``R``."""
    rows = np.asarray(rows, dtype=np.int64)
    return sp.csr_matrix((np.ones(len(rows)), rows, np.arange(len(rows) + 1)), shape=(len(rows), n_instances))


def bag_examples(bags, bag_indices, scale) -> sp.csr_matrix:
    """Examples ``scale_i * sum_{x in B_i} x`` for the bags ``bag_indices`` (``scale = 1/|B|`` gives the
    bag means), as rows of ``R``."""
    bag_indices = np.asarray(bag_indices, dtype=np.int64)
    weights = np.zeros(bags.n_bags)
    weights[bag_indices] = scale
    return kernels.bag_matrix(bags.offsets, weights)[bag_indices]
