"""The per-bag, per-instance steps of the pdMISVM ADMM iteration (docs/algorithms.md 2.5), compiled with numba.

Arrays are row-major with one row per instance (``n x K``) or per bag (``N x K``), so a bag is a block of
consecutive rows and each instance's K class values are contiguous. One call of :func:`admm_sweep` does
steps 3-9 of an iteration and prepares the right-hand side of the next W-step, in one pass over the
``n x K`` state; the products with X stay in BLAS (the estimators call them).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Indices into the statistics vector filled by admm_sweep: squared Frobenius norms of the five residuals
# (2.5 step 8), the hinge part of the objective (2.2) without C, the loss term C sum (Y o E)_+ and the
# quadratic penalty terms of L_mu (2.3) without the factor mu/2.
SQ_E, SQ_Q, SQ_T, SQ_R, SQ_U, HINGE, LOSS_E, PENALTY = range(8)
N_STATS = 8
# Reassociation lets LLVM vectorize the sums over classes; no "nnan"/"ninf", so a non-finite iterate still
# shows in the residual and stops the fit (2.8).
FASTMATH = {"reassoc", "contract", "nsz", "arcp"}


@njit(cache=True, nogil=True, fastmath=FASTMATH, inline="always")
def _prepare_row(j, c, T, U, Theta, Xi, G, b, inv_mu, alpha, add_onehot, M, uvec, tsum, usum):
    """Right-hand side pieces of the W-step (2.5 step 1) and the sums of the b-step (step 2) for row j.

    ``M[j] = T^[j]`` (exact, ``alpha = 0``) or ``T~[j]`` (inexact, ``alpha = 1``); ``uvec[j]`` is the
    sum over classes of ``U^`` (or ``U~``) at j, which enters only the column of j's class ``c``, where it
    is added when ``add_onehot`` (the linear variants fold both terms into one product ``X^T M``).
    """
    K = T.shape[1]
    urow = 0.0
    for m in range(K):
        tb = T[j, m] + Theta[j, m] * inv_mu
        tsum[m] += tb
        M[j, m] = tb - b[m] - alpha * G[j, m]
        urow += U[j, m] + Xi[j, m] * inv_mu
    usum[c] += urow
    u = urow - K * (b[c] + alpha * G[j, c])
    uvec[j] = u
    if add_onehot:
        M[j, c] += u


@njit(cache=True, nogil=True)
def prepare(offsets, codes, T, U, Theta, Xi, G, b, mu, alpha, add_onehot, M, uvec, tsum, usum,
            maxT, maxU):
    """W-step right-hand side, b-step sums and the bag maxima of T and U for the current state."""
    K = T.shape[1]
    inv_mu = 1.0 / mu
    tsum[:] = 0.0
    usum[:] = 0.0
    for i in range(len(offsets) - 1):
        c = codes[i]
        for m in range(K):
            maxT[i, m] = -np.inf
            maxU[i, m] = -np.inf
        for j in range(offsets[i], offsets[i + 1]):
            for m in range(K):
                maxT[i, m] = max(maxT[i, m], T[j, m])
                maxU[i, m] = max(maxU[i, m], U[j, m])
            _prepare_row(j, c, T, U, Theta, Xi, G, b, inv_mu, alpha, add_onehot, M, uvec, tsum, usum)


@njit(cache=True, nogil=True, fastmath=FASTMATH)
def admm_sweep(offsets, codes, Y, C, mu, mu_next, alpha, add_onehot, b, G, XG, s, update_G,
               E, Q, R, T, U, Lambda, Sigma, Omega, Theta, Xi, maxT, maxU, M, uvec, tsum, usum, stats):
    """Steps 3-9 of one iteration (E, Q, R, T, U, residuals, duals) bag by bag, then the next W-step's
    right-hand side with ``mu_next``.

    W and b are already updated. With ``update_G`` the inexact W-step's ``G -= s * XG`` (its new
    ``X^T W``) is applied while G is read. ``maxT``/``maxU`` hold bagmax(T)/bagmax(U) on entry and of the
    new T/U on exit. ``stats`` receives the sums listed at the top of this module.
    """
    K = T.shape[1]
    inv_mu = 1.0 / mu
    inv_mu_next = 1.0 / mu_next
    kappa = C / mu
    tsum[:] = 0.0
    usum[:] = 0.0
    sq_e = sq_q = sq_t = sq_r = sq_u = hinge_sum = loss_e = penalty = 0.0
    t_max = np.empty(K)
    u_max = np.empty(K)
    phi_max = np.empty(K)
    psi_max = np.empty(K)
    score_max = np.empty(K)
    j_phi = np.empty(K, dtype=np.int64)
    j_psi = np.empty(K, dtype=np.int64)
    for i in range(len(offsets) - 1):
        c = codes[i]
        lo, hi = offsets[i], offsets[i + 1]
        # steps 3-5: E (proximal hinge), Q (new E, old R, old T), R (new E, new Q, old U)
        for m in range(K):
            y = Y[i, m]
            lam = Lambda[i, m] * inv_mu
            S = y - Q[i, m] + R[i, m] - lam
            z = y * S
            e = S if z < 0.0 else (0.0 if z <= kappa else S - kappa * y)
            E[i, m] = e
            q = 0.5 * (y - e + R[i, m] - lam + maxT[i, m] - Sigma[i, m] * inv_mu)
            Q[i, m] = q
            R[i, m] = 0.5 * (e - y + q + lam + maxU[i, m] - Omega[i, m] * inv_mu)
            phi_max[m] = -np.inf
            psi_max[m] = -np.inf
            score_max[m] = -np.inf
            j_phi[m] = lo  # stays in the bag even if a non-finite iterate defeats every comparison
            j_psi[m] = lo
        # steps 6-7: T = Phi, U = Psi, then move each bag's arg-max (first on ties) half-way to Q / R
        bc = b[c]
        for j in range(lo, hi):
            if update_G:
                for m in range(K):
                    G[j, m] -= s[m] * XG[j, m]
            gy = G[j, c] + bc
            for m in range(K):
                score = G[j, m] + b[m]
                score_max[m] = max(score_max[m], score)
                phi = score - Theta[j, m] * inv_mu
                T[j, m] = phi
                if phi > phi_max[m]:
                    phi_max[m] = phi
                    j_phi[m] = j
                psi = gy - Xi[j, m] * inv_mu
                U[j, m] = psi
                if psi > psi_max[m]:
                    psi_max[m] = psi
                    j_psi[m] = j
        for m in range(K):
            T[j_phi[m], m] = 0.5 * (phi_max[m] + Q[i, m] + Sigma[i, m] * inv_mu)
            U[j_psi[m], m] = 0.5 * (psi_max[m] + R[i, m] + Omega[i, m] * inv_mu)
            hinge = 1.0 - Y[i, m] * (score_max[m] - score_max[c])
            if hinge > 0.0:
                hinge_sum += hinge
        # steps 8-9 for the instance blocks, then the next W-step's right-hand side; sums go to local
        # scalars and bag maxima to local rows (stores to the shared arrays would serialize the loop)
        for m in range(K):
            t_max[m] = -np.inf
            u_max[m] = -np.inf
        for j in range(lo, hi):
            gy = G[j, c] + bc
            for m in range(K):
                t = T[j, m]
                t_res = t - (G[j, m] + b[m])
                theta = Theta[j, m] + mu * t_res
                Theta[j, m] = theta
                sq_t += t_res * t_res
                penalty += (t_res + theta * inv_mu) ** 2
                t_max[m] = max(t_max[m], t)
                u = U[j, m]
                u_res = u - gy
                xi = Xi[j, m] + mu * u_res
                Xi[j, m] = xi
                sq_u += u_res * u_res
                penalty += (u_res + xi * inv_mu) ** 2
                u_max[m] = max(u_max[m], u)
            _prepare_row(j, c, T, U, Theta, Xi, G, b, inv_mu_next, alpha, add_onehot, M, uvec, tsum, usum)
        # steps 8-9 for the bag blocks
        for m in range(K):
            maxT[i, m] = t_max[m]
            maxU[i, m] = u_max[m]
            e_res = E[i, m] - (Y[i, m] - Q[i, m] + R[i, m])
            q_res = Q[i, m] - t_max[m]
            r_res = R[i, m] - u_max[m]
            Lambda[i, m] += mu * e_res
            Sigma[i, m] += mu * q_res
            Omega[i, m] += mu * r_res
            sq_e += e_res * e_res
            sq_q += q_res * q_res
            sq_r += r_res * r_res
            penalty += ((e_res + Lambda[i, m] * inv_mu) ** 2 + (q_res + Sigma[i, m] * inv_mu) ** 2
                        + (r_res + Omega[i, m] * inv_mu) ** 2)
            loss_e += C * max(Y[i, m] * E[i, m], 0.0)
    stats[SQ_E], stats[SQ_Q], stats[SQ_T], stats[SQ_R], stats[SQ_U] = sq_e, sq_q, sq_t, sq_r, sq_u
    stats[HINGE], stats[LOSS_E], stats[PENALTY] = hinge_sum, loss_e, penalty


@njit(cache=True, nogil=True)
def column_and_class_sq_norms(offsets, codes, XG, col_sq, cls_sq):
    """``col_sq[m] = ||X^T g_m||^2`` and ``cls_sq[m] = ||X_{P_m}^T g_m||^2`` from ``XG = X g`` (the
    denominator of the inexact step, 2.5 step 1)."""
    K = XG.shape[1]
    col_sq[:] = 0.0
    cls_sq[:] = 0.0
    for i in range(len(offsets) - 1):
        c = codes[i]
        for j in range(offsets[i], offsets[i + 1]):
            for m in range(K):
                v = XG[j, m] * XG[j, m]
                col_sq[m] += v
            cls_sq[c] += XG[j, c] * XG[j, c]
