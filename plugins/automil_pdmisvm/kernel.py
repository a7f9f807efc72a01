"""Kernel pdMISVM: the ADMM of section 2 with w_m in a kernel feature space, W-step by the push-through
identity (docs/algorithms.md section 3)."""

from __future__ import annotations

import numbers

import numpy as np

from automil.kernels import gamma_exponential_kernel
from automil_pdmisvm.admm import PdMISVMBase
from automil_pdmisvm.updates import prepare

# The default bound on the Gram matrices of a fit, in MB (``max_gram_mb``).
MAX_GRAM_MB = 4096


def gram_megabytes(n: int, class_rows: list[int]) -> float:
    """The MB of the per-class Gram matrices a fit on ``n`` training instances holds, ``class_rows[m]`` of
    them in the bags of class m (3.4: one ``(n + |P_m|)``-square matrix per class, one more while solving)."""
    return (sum((n + r) ** 2 for r in class_rows) + (n + max(class_rows)) ** 2) * 8 / 2**20


class KernelPdMISVMClassifier(PdMISVMBase):
    """Multi-class multi-instance SVM with the gamma-exponential kernel, trained by primal-dual ADMM.

    W is never formed; the W-step computes the instance scores ``G_m = a_m^T k(Xhat_m, X)`` with
    ``a_m = (Kg_m + Delta_m/mu)^{-1} s_m`` (push-through identity, 3.2). The symmetric matrix
    ``Delta_m^{-1/2} Kg_m Delta_m^{-1/2}`` is eigendecomposed once per class, so an iteration costs
    O(K (n + n_m)^2) instead of the reference code's O(K (n + n_m)^3) inverse. Memory is
    ``sum_m (n + n_m)^2`` doubles: a few thousand instances at most.

    Parameters
    ----------
    C : float, default=1.0
        Weight of the hinge loss, summed over bags and classes.
    gamma : float, default=2.0
        Exponent of the kernel ``exp(-(||x - x'|| / ell)^gamma)``, in (0, 2]; not a bandwidth.
    ell : float or "auto", default=1.0
        Length scale of the kernel (an automil extension; 1 reproduces the reference code). ``"auto"`` is
        ``sqrt(n_features)``, the centre of the search range: for standardized instances
        ``||x - x'||^2`` is about ``2 d``, so ``ell = 1`` makes the Gram nearly the identity (3.5); the
        registered learner ``pdmisvm-kernel`` defaults to ``"auto"`` and ``gamma=1``.
    mu0, rho, maxiter, tol, random_state
        As in :class:`~automil_pdmisvm.linear.PdMISVMClassifier`.
    max_gram_mb : float, default=4096
        Refuse to fit (``ValueError``) when the per-class Gram eigenvectors would exceed this many MB.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    dual_coef_ : ndarray of shape (n_train_instances, n_classes)
        Column m holds ``a_m`` folded onto the training instances: new scores are
        ``k(Z, X_train) @ dual_coef_ + intercept_``. Computed from the final state by one extra W-step,
        as the reference code predicts (3.4).
    support_instances_ : ndarray of shape (n_train_instances, n_features)
        The training instances.
    intercept_ : ndarray of shape (n_classes,)
    n_iter_, residual_history_, objective_history_, lagrangian_history_
        As in :class:`~automil_pdmisvm.linear.PdMISVMClassifier`; the objective uses
        ``||w_m||^2 = a_m^T Kg_m a_m``.

    References
    ----------
    "A Linear Primal-Dual Multi-Instance SVM for Big Data Classifications", ICDM 2021, kernel section;
    reference code minds-mines/pdMISVM.jl (KernelpdMISVMClassifier.jl). docs/algorithms.md section 3.
    """

    add_onehot = False

    def __init__(self, C=1.0, gamma=2.0, ell=1.0, mu0=1e-3, rho=1.2, maxiter=1000, tol=1e-6,
                 random_state=0, max_gram_mb=MAX_GRAM_MB):
        self.C = C
        self.gamma = gamma
        self.ell = ell
        self.mu0 = mu0
        self.rho = rho
        self.maxiter = maxiter
        self.tol = tol
        self.random_state = random_state
        self.max_gram_mb = max_gram_mb

    def _check_params(self):
        super()._check_params()
        if not isinstance(self.gamma, numbers.Real) or not 0 < self.gamma <= 2:
            raise ValueError(f"KernelPdMISVMClassifier: parameter gamma must be in (0, 2], got {self.gamma!r}")
        if self.ell != "auto" and (not isinstance(self.ell, numbers.Real) or not self.ell > 0):
            raise ValueError(f"KernelPdMISVMClassifier: parameter ell must be positive or 'auto', got "
                             f"{self.ell!r}")

    def _kernel(self, A, B):
        ell = np.sqrt(self.n_features_in_) if self.ell == "auto" else float(self.ell)
        return gamma_exponential_kernel(A, B, float(self.gamma), ell)

    def _draw_model(self, bags, K, rng):
        self._b = rng.standard_normal(K)  # 3.3: G is drawn in the code but overwritten before use

    def _start(self, st):
        n, K = st.X.shape[0], st.K
        rows = [st.instance_rows(m) for m in range(K)]
        needed = gram_megabytes(n, [len(r) for r in rows])
        if needed > self.max_gram_mb:
            raise ValueError(f"KernelPdMISVMClassifier: {n} training instances need about {needed:.0f} MB of "
                             f"Gram matrices (more than max_gram_mb={self.max_gram_mb}); use pdmisvm or "
                             "pdmisvm-inexact, or fewer instances")
        self._rows = rows
        self._eigen = [class_push_through_eigen(self._kernel, st.X, r, K) for r in rows]
        self._last = (np.empty_like(self._b), [np.empty(n + len(r)) for r in rows], np.empty(1))
        self._z = [np.empty(n + len(r)) for r in rows]

    def _w_step(self, st, mu):
        """3.2: G_m = (Kg_m a_m)[:n] with a_m = Delta^-1/2 V (Lam + I/mu)^-1 V^T Delta^-1/2 s_m."""
        half_w2 = 0.0
        for m, (eigen, rows) in enumerate(zip(self._eigen, self._rows)):
            z = self._project(st, m, eigen[1], rows)
            half_w2 += push_through_scores(eigen, z, mu, st.G[:, m])
        self._mu = mu
        return half_w2

    def _project(self, st, m, V, rows):
        """``z_m = V_m^T Delta^{-1/2} s_m`` with ``s_m = [T^_m, (1/K) sum_r U^_{r, P_m}]`` (3.2)."""
        n = st.X.shape[0]
        z = self._z[m]
        z[:n] = st.M[:, m]
        z[n:] = st.uvec[rows] / np.sqrt(st.K)
        z[:] = V.T @ z
        return z

    def _score_sums(self, st):
        return st.G.sum(axis=0), np.array([st.G[r, m].sum() for m, r in enumerate(self._rows)])

    def _snapshot(self):
        if hasattr(self, "_mu"):
            self._last[0][:] = self._b
            for saved, z in zip(self._last[1], self._z):
                saved[:] = z
            self._last[2][0] = self._mu

    def _restore(self):
        if not hasattr(self, "_mu"):
            raise ValueError("KernelPdMISVMClassifier: the first iteration was already non-finite; check "
                             "C, mu0 and the scale of the instances")
        self._b[:] = self._last[0]
        for saved, z in zip(self._last[1], self._z):
            z[:] = saved
        self._mu = self._last[2][0]

    def _finish(self, st, mu, finite):
        n, K = st.X.shape[0], st.K
        if finite:  # 3.4: one more W-step from the final state (T, Theta, U, Xi, b and the final mu)
            prepare(st.offsets, st.codes, st.T, st.U, st.Theta, st.Xi, st.G, self._b, mu, 0.0, False,
                    st.M, st.uvec, st.tsum, st.usum, st.maxT, st.maxU)
            for m, ((lam, V, keep), rows) in enumerate(zip(self._eigen, self._rows)):
                self._project(st, m, V, rows)
            self._mu = mu
        self.dual_coef_ = np.zeros((n, K))
        for m, ((lam, V, keep), rows) in enumerate(zip(self._eigen, self._rows)):
            a = V @ (np.where(keep, 1.0 / (lam + 1.0 / self._mu), 0.0) * self._z[m])
            self.dual_coef_[:, m] = a[:n]
            self.dual_coef_[rows, m] += np.sqrt(K) * a[n:]
        self.support_instances_ = st.X
        for name in ("_rows", "_eigen", "_last", "_z", "_mu"):
            self.__dict__.pop(name, None)

    def _class_scores(self, bags):
        return self._kernel(bags.X, self.support_instances_) @ self.dual_coef_ + self.intercept_


def class_push_through_eigen(kernel, X, rows, K):
    """Eigendecomposition of ``Delta^{-1/2} Kg Delta^{-1/2}`` for ``Xhat = [X, X_{P_m}]`` (3.5).

    Returns eigenvalues, eigenvectors and the mask of eigenvalues kept (``> (n + n_m) eps max``; ``Kg``
    is singular by construction because the columns of ``X_{P_m}`` appear twice).
    """
    Xhat = np.concatenate((X, X[rows]))
    scale = np.concatenate((np.ones(len(X)), np.full(len(rows), np.sqrt(K))))
    A = kernel(Xhat, Xhat)
    A *= scale[:, None]
    A *= scale[None, :]
    lam, V = np.linalg.eigh(A)
    keep = lam > len(Xhat) * np.finfo(np.float64).eps * lam.max()
    return lam, V, keep


def push_through_scores(eigen, z, mu, out):
    """Write ``G_m = (Kg_m a_m)[:n] = V[:n] Lam (Lam + I/mu)^{-1} z`` into ``out`` (length n) and return
    ``1/2 ||w_m||^2 = 1/2 z^T Lam (Lam + I/mu)^{-2} z`` (3.2 in the eigenbasis of 3.5)."""
    lam, V, keep = eigen
    inv = np.where(keep, 1.0 / (lam + 1.0 / mu), 0.0)
    out[:] = V[:len(out)] @ (lam * inv * z)
    return 0.5 * float(np.sum(z * z * lam * inv * inv))
