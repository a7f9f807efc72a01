"""Linear pdMISVM: the exact variant (W by the eigen-shifted normal equations) and the inexact variant
(W by one steepest-descent step with exact line search), docs/algorithms.md section 2."""

from __future__ import annotations

import numpy as np

from automil_pdmisvm.admm import PdMISVMBase
from automil_pdmisvm.updates import column_and_class_sq_norms

_PARAMETERS_DOC = """
    Parameters
    ----------
    C : float, default=1.0
        Weight of the hinge loss, summed over bags and classes (not divided by the number of bags).
    mu0 : float, default=1e-3
        Initial penalty parameter mu of the augmented Lagrangian.
    rho : float, default=1.2
        Growth factor of mu per iteration (> 1). Smaller values take more iterations and end closer to the
        optimum of the objective (docs/algorithms.md 15.2.7).
    maxiter : int, default=1000
        Maximum number of iterations.
    tol : float, default=1e-6
        Stop when the sum of the Frobenius norms of the five constraint residuals falls below ``tol``.
    random_state : int, numpy Generator or None, default=0
        Seeds the standard-normal initialization of W, b, E, Q, R, T and U; the result depends on it
        (fixed by default so that two fits on the same bags agree).
"""

_ATTRIBUTES_DOC = """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_features, n_classes)
        W, one hyperplane per class.
    intercept_ : ndarray of shape (n_classes,)
        b.
    n_iter_ : int
        Iterations run.
    residual_history_, objective_history_, lagrangian_history_ : ndarray of shape (n_iter_,)
        Per iteration: the stopping quantity (sum of residual norms), the objective of docs/algorithms.md 2.2
        at the iteration's (W, b), and the augmented Lagrangian L_mu after the dual update.
"""


class _LinearPdMISVM(PdMISVMBase):
    def __init__(self, C=1.0, mu0=1e-3, rho=1.2, maxiter=1000, tol=1e-6, random_state=0):
        self.C = C
        self.mu0 = mu0
        self.rho = rho
        self.maxiter = maxiter
        self.tol = tol
        self.random_state = random_state

    def _draw_model(self, bags, K, rng):
        # 2.4: W and b are the first draws of the generator.
        self.coef_ = rng.standard_normal((bags.n_features, K))
        self._b = rng.standard_normal(K)
        self._last = (np.empty_like(self.coef_), np.empty_like(self._b))

    def _start(self, st):
        X = st.X
        np.matmul(X, self.coef_, out=st.G)
        # The b-step needs sum_j G_jm and sum_{j in P_m} G_jm; both are linear in W.
        self._xsum = X.sum(axis=0)
        bag_sums = np.add.reduceat(X, st.offsets[:-1], axis=0)
        self._xclass = (st.codes[None, :] == np.arange(st.K)[:, None]) @ bag_sums

    def _score_sums(self, st):
        return self._xsum @ self.coef_, np.einsum("kd,dk->k", self._xclass, self.coef_)

    def _snapshot(self):
        self._last[0][:] = self.coef_
        self._last[1][:] = self._b

    def _restore(self):
        self.coef_[:] = self._last[0]
        self._b[:] = self._last[1]

    def _finish(self, st, mu, finite):
        for name in ("_xsum", "_xclass", "_last", "_XG", "_s", "_eigen"):
            self.__dict__.pop(name, None)

    def _class_scores(self, bags):
        return bags.X @ self.coef_ + self.intercept_


class PdMISVMClassifier(_LinearPdMISVM):
    __doc__ = f"""Multi-class multi-instance SVM trained by primal-dual ADMM, exact W-step.

    Bag score for class m: ``max_j (w_m . x_j + b_m)``; prediction: the arg-max class. Each iteration
    minimizes the augmented Lagrangian exactly over W with the class matrices
    ``A_m = X X^T + K X_{{P_m}} X_{{P_m}}^T`` eigendecomposed once at the start (A_m does not depend on mu):
    ``w_m = V_m diag(1 / (lambda_m + 1/mu)) V_m^T r_m`` costs O(K d^2) per iteration after an
    O(n d^2 + K d^3) set-up.
    {_PARAMETERS_DOC}{_ATTRIBUTES_DOC}
    References
    ----------
    "A Linear Primal-Dual Multi-Instance SVM for Big Data Classifications", ICDM 2021; reference code
    minds-mines/pdMISVM.jl. docs/algorithms.md section 2.
    """

    def _start(self, st):
        super()._start(st)
        self._eigen = class_eigen(st.X, [st.instance_rows(m) for m in range(st.K)])

    def _w_step(self, st, mu):
        W = exact_w(st.X.T @ st.M, *self._eigen, mu)  # 2.5 step 1, exact
        self.coef_[:] = W
        np.matmul(st.X, self.coef_, out=st.G)
        return 0.5 * float(np.vdot(W, W))


class InexactPdMISVMClassifier(_LinearPdMISVM):
    __doc__ = f"""Multi-class multi-instance SVM trained by primal-dual ADMM, inexact W-step.

    Same model and iteration as :class:`PdMISVMClassifier`, but W takes one steepest-descent step with
    exact line search on the W-block of the augmented Lagrangian: no d x d matrix, so the cost per
    iteration is O(n d K), linear in the number of features.
    {_PARAMETERS_DOC}{_ATTRIBUTES_DOC}
    References
    ----------
    "A Linear Primal-Dual Multi-Instance SVM for Big Data Classifications", ICDM 2021. docs/algorithms.md 2.5.
    """

    alpha = 1.0
    update_G = True

    def _start(self, st):
        super()._start(st)
        self._XG = np.empty_like(st.G)
        self._s = np.zeros(st.K)
        self._col_sq, self._cls_sq = np.empty(st.K), np.empty(st.K)

    def _w_step(self, st, mu):
        # 2.5 step 1, inexact: st.M is the residual T~ with the U~ sums folded into each class column,
        # so X^T M is the data part of every gradient g_m at once.
        W, XtM = self.coef_, st.X.T @ st.M
        g = W - mu * XtM
        numerator = np.einsum("dk,dk->k", W, g) - mu * np.einsum("dk,dk->k", g, XtM)
        np.matmul(st.X, g, out=self._XG)
        column_and_class_sq_norms(st.offsets, st.codes, self._XG, self._col_sq, self._cls_sq)
        denominator = np.einsum("dk,dk->k", g, g) + mu * self._col_sq + mu * st.K * self._cls_sq
        np.divide(numerator, denominator, out=self._s, where=denominator > 0)
        self._s[denominator <= 0] = 0.0
        W -= self._s * g  # G follows in the sweep: G -= s * XG (update_G)
        return 0.5 * float(np.vdot(W, W))


def class_eigen(X, class_rows):
    """Eigendecomposition of ``A_m = X^T X + K X_{P_m}^T X_{P_m}`` for every class m (2.4 step 3).

    Returns the eigenvalues ``(K, d)``, the eigenvectors ``(K, d, d)`` and a mask ``(K, d)`` of the
    eigenvalues treated as zero (``<= d eps lambda_max``, 2.8), whose components are dropped.
    """
    K, d = len(class_rows), X.shape[1]
    grams = np.stack([X[rows].T @ X[rows] for rows in class_rows])
    total = grams.sum(axis=0)
    lam, V = np.linalg.eigh(total[None] + K * grams)
    keep = lam > d * np.finfo(np.float64).eps * lam.max(axis=1, keepdims=True)
    return lam, V, keep


def exact_w(XtM, lam, V, keep, mu):
    """``w_m = V_m diag(1/(lambda_m + 1/mu)) V_m^T r_m`` for all m, with ``r = X^T M`` (2.5 step 1)."""
    z = np.matmul(XtM.T[:, None, :], V)[:, 0, :]  # row m: (V_m^T r_m)^T
    z *= np.where(keep, 1.0 / (lam + 1.0 / mu), 0.0)
    return np.matmul(V, z[:, :, None])[:, :, 0].T
