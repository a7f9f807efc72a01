"""Numba solvers of the SVM dual with per-example margins ``rho_i`` (docs/algorithms.md 1.8), which libsvm and
liblinear cannot express; sMIL needs them for its positive-bag margins ``2/|X| - 1`` (section 8).

    min_alpha  1/2 alpha^T Q alpha - rho^T alpha,   Q_ij = t_i t_j k(z_i, z_j),   0 <= alpha_i <= C_i

``smo`` keeps the equality ``sum_i t_i alpha_i = 0`` (an unregularized bias), on a precomputed kernel;
``dual_cd`` is liblinear's dual coordinate descent on explicit (sparse) features with the bias as a
constant feature, which regularizes the bias but costs only ``O(nnz)`` per epoch.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_TAU = 1e-12  # libsvm's floor for a non-positive curvature


@njit(cache=True, nogil=True)
def _smo(G, t, rho, C, tol, max_iter):
    m = t.shape[0]
    alpha = np.zeros(m)
    grad = -rho.copy()  # gradient of the dual objective at alpha = 0
    n_iter = 0
    while n_iter < max_iter:
        # Working-set selection with second-order information (Fan, Chen & Lin 2005, as in libsvm).
        g_max = -np.inf
        i = -1
        for s in range(m):
            if (t[s] > 0 and alpha[s] < C[s]) or (t[s] < 0 and alpha[s] > 0):
                v = -t[s] * grad[s]
                if v >= g_max:
                    g_max = v
                    i = s
        g_min = np.inf
        j = -1
        best = np.inf
        for s in range(m):
            if (t[s] > 0 and alpha[s] > 0) or (t[s] < 0 and alpha[s] < C[s]):
                v = -t[s] * grad[s]
                if v < g_min:
                    g_min = v
                if i >= 0 and v < g_max:
                    b = g_max - v
                    a = G[i, i] + G[s, s] - 2.0 * G[i, s]
                    if a <= 0.0:
                        a = _TAU
                    if -(b * b) / a <= best:
                        best = -(b * b) / a
                        j = s
        if i < 0 or j < 0 or g_max - g_min < tol:
            break
        n_iter += 1
        # Two-variable update keeping t_i alpha_i + t_j alpha_j fixed, clipped to the boxes (libsvm).
        Q_ij = t[i] * t[j] * G[i, j]
        old_i, old_j = alpha[i], alpha[j]
        if t[i] != t[j]:
            quad = G[i, i] + G[j, j] + 2.0 * Q_ij
            if quad <= 0.0:
                quad = _TAU
            delta = (-grad[i] - grad[j]) / quad
            diff = alpha[i] - alpha[j]
            alpha[i] += delta
            alpha[j] += delta
            if diff > 0:
                if alpha[j] < 0:
                    alpha[j] = 0.0
                    alpha[i] = diff
            elif alpha[i] < 0:
                alpha[i] = 0.0
                alpha[j] = -diff
            if diff > C[i] - C[j]:
                if alpha[i] > C[i]:
                    alpha[i] = C[i]
                    alpha[j] = C[i] - diff
            elif alpha[j] > C[j]:
                alpha[j] = C[j]
                alpha[i] = C[j] + diff
        else:
            quad = G[i, i] + G[j, j] - 2.0 * Q_ij
            if quad <= 0.0:
                quad = _TAU
            delta = (grad[i] - grad[j]) / quad
            total = alpha[i] + alpha[j]
            alpha[i] -= delta
            alpha[j] += delta
            if total > C[i]:
                if alpha[i] > C[i]:
                    alpha[i] = C[i]
                    alpha[j] = total - C[i]
            elif alpha[j] < 0:
                alpha[j] = 0.0
                alpha[i] = total
            if total > C[j]:
                if alpha[j] > C[j]:
                    alpha[j] = C[j]
                    alpha[i] = total - C[j]
            elif alpha[i] < 0:
                alpha[i] = 0.0
                alpha[j] = total
        d_i = (alpha[i] - old_i) * t[i]
        d_j = (alpha[j] - old_j) * t[j]
        for s in range(m):
            grad[s] += t[s] * (G[s, i] * d_i + G[s, j] * d_j)
    # Bias (docs/algorithms.md 1.8, libsvm's rule): f(z_i) = t_i rho_i on free support vectors.
    n_free = 0
    free_sum = 0.0
    upper = np.inf
    lower = -np.inf
    for s in range(m):
        yg = t[s] * grad[s]
        if alpha[s] >= C[s]:
            if t[s] < 0:
                upper = min(upper, yg)
            else:
                lower = max(lower, yg)
        elif alpha[s] <= 0.0:
            if t[s] > 0:
                upper = min(upper, yg)
            else:
                lower = max(lower, yg)
        else:
            n_free += 1
            free_sum += yg
    r = free_sum / n_free if n_free > 0 else 0.5 * (upper + lower)
    return alpha, -r, n_iter


def smo(G, t, rho, C, *, tol=1e-3, max_iter=None):
    """Solve the dual with the equality constraint on a precomputed kernel ``G`` (m x m).

    Returns ``(alpha, b, n_iter)``; the decision function is ``f(z) = sum_i alpha_i t_i k(z_i, z) + b``.
    Stops when the maximal KKT violation is below ``tol`` (libsvm's default 1e-3) or after ``max_iter``
    pair updates (default ``max(10^7, 100 m)``, libsvm's cap).
    """
    G = np.ascontiguousarray(G, dtype=np.float64)
    t = np.ascontiguousarray(t, dtype=np.float64)
    m = len(t)
    max_iter = max(10_000_000, 100 * m) if max_iter is None else int(max_iter)
    return _smo(G, t, np.ascontiguousarray(rho, dtype=np.float64),
                np.ascontiguousarray(C, dtype=np.float64), float(tol), max_iter)


@njit(cache=True, nogil=True)
def _dual_cd(data, indices, indptr, n_features, t, rho, C, tol, max_epochs, seed):
    m = t.shape[0]
    w = np.zeros(n_features + 1)  # last entry: the bias, the weight of a constant feature 1
    alpha = np.zeros(m)
    Q_diag = np.empty(m)
    for s in range(m):
        acc = 1.0
        for p in range(indptr[s], indptr[s + 1]):
            acc += data[p] * data[p]
        Q_diag[s] = acc
    np.random.seed(seed)
    order = np.arange(m)
    epoch = 0
    while epoch < max_epochs:
        np.random.shuffle(order)
        pg_max = -np.inf
        pg_min = np.inf
        for s in order:
            score = w[n_features]
            for p in range(indptr[s], indptr[s + 1]):
                score += w[indices[p]] * data[p]
            g = t[s] * score - rho[s]
            # Projected gradient: zero where the bound is active in the direction of descent.
            if alpha[s] <= 0.0:
                pg = min(g, 0.0)
            elif alpha[s] >= C[s]:
                pg = max(g, 0.0)
            else:
                pg = g
            pg_max = max(pg_max, pg)
            pg_min = min(pg_min, pg)
            if pg != 0.0:
                new = min(max(alpha[s] - g / Q_diag[s], 0.0), C[s])
                step = (new - alpha[s]) * t[s]
                alpha[s] = new
                for p in range(indptr[s], indptr[s + 1]):
                    w[indices[p]] += step * data[p]
                w[n_features] += step
        epoch += 1
        if pg_max - pg_min <= tol:
            break
    return w, alpha, epoch


def dual_cd(Z, t, rho, C, *, tol=1e-4, max_epochs=1000, seed=0):
    """Dual coordinate descent (Hsieh et al. 2008, liblinear's dual L1-loss SVM) on the explicit example
    features ``Z`` (dense or CSR, m x d) with a constant feature 1 for the bias.

    Returns ``(w, b, alpha, n_epochs)``. ``tol`` is liblinear's stopping gap on the projected gradient
    (scikit-learn's LinearSVC default 1e-4); the visiting order is shuffled with ``seed`` each epoch.
    """
    import scipy.sparse as sp

    Z = sp.csr_matrix(Z, dtype=np.float64)
    Z.sort_indices()
    w, alpha, epochs = _dual_cd(Z.data, Z.indices.astype(np.int64), Z.indptr.astype(np.int64), Z.shape[1],
                                np.ascontiguousarray(t, dtype=np.float64),
                                np.ascontiguousarray(rho, dtype=np.float64),
                                np.ascontiguousarray(C, dtype=np.float64), float(tol), int(max_epochs),
                                int(seed))
    return w[:-1].copy(), float(w[-1]), alpha, epochs
