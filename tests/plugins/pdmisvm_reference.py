"""A plain numpy transcription of docs/algorithms.md 2.5 (K x n column convention, one array op per formula),
used by the tests as an independent reference for the fused, in-place implementation."""

import numpy as np


def bagmax(A, offsets):
    return np.stack([A[:, lo:hi].max(axis=1) for lo, hi in zip(offsets[:-1], offsets[1:])], axis=1)


def bag_argmax(A, offsets):
    return [lo + np.argmax(A[:, lo:hi], axis=1) for lo, hi in zip(offsets[:-1], offsets[1:])]


def reference_fit(bags, y, K, *, exact=True, C=1.0, mu0=1e-3, rho=1.2, maxiter=1000, tol=1e-6, seed=0):
    """Returns W (d x K), b, the residual history and the number of iterations.

    Draws the initial state from ``numpy.random.default_rng(seed)`` in the order and shapes the plugin
    uses (W, b, E, Q, R, T, U; instance blocks drawn n x K and transposed), so both start equal.
    """
    Xr, offsets = bags.X, bags.offsets
    X = Xr.T  # d x n
    d, n = X.shape
    N = len(offsets) - 1
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((d, K))
    b = rng.standard_normal(K)
    E, Q, R = (rng.standard_normal((N, K)).T.copy() for _ in range(3))
    T, U = (rng.standard_normal((n, K)).T.copy() for _ in range(2))
    Lam, Sig, Omg = (np.zeros((K, N)) for _ in range(3))
    The, Xi = np.zeros((K, n)), np.zeros((K, n))
    Y = np.where(np.arange(K)[:, None] == y[None, :], 1.0, -1.0)
    cj = np.repeat(y, np.diff(offsets))
    P = [cj == m for m in range(K)]
    nm = np.array([p.sum() for p in P])
    mu = mu0
    A = [X @ X.T + K * X[:, P[m]] @ X[:, P[m]].T for m in range(K)]

    def scores():
        G = W.T @ X
        Gy = np.tile(G[cj, np.arange(n)], (K, 1))
        By = np.tile(b[cj], (K, 1))
        return G, Gy, By

    G, Gy, By = scores()
    history = []
    for it in range(maxiter):
        if exact:
            Th = T - b[:, None] + The / mu
            Uh = U - By + Xi / mu
            for m in range(K):
                r = X @ Th[m] + X[:, P[m]] @ Uh[:, P[m]].sum(axis=0)
                W[:, m] = np.linalg.solve(A[m] + np.eye(d) / mu, r)
        else:
            Tt = T - G - b[:, None] + The / mu
            Ut = U - Gy - By + Xi / mu
            g, s = np.empty_like(W), np.empty(K)
            for m in range(K):
                u = Ut[:, P[m]].sum(axis=0)
                g[:, m] = W[:, m] - mu * X @ Tt[m] - mu * X[:, P[m]] @ u
                gm = g[:, m]
                num = W[:, m] @ gm - mu * Tt[m] @ (X.T @ gm) - mu * u @ (X[:, P[m]].T @ gm)
                den = gm @ gm + mu * np.sum((X.T @ gm) ** 2) + mu * K * np.sum((X[:, P[m]].T @ gm) ** 2)
                s[m] = num / den
            W -= s * g
        G, Gy, By = scores()
        for m in range(K):
            b[m] = ((T - G + The / mu)[m].sum() + (U - Gy + Xi / mu)[:, P[m]].sum()) / (n + K * nm[m])
        G, Gy, By = scores()
        S = Y - Q + R - Lam / mu
        z = Y * S
        kap = C / mu
        E = np.where(z < 0, S, np.where(z <= kap, 0.0, S - kap * Y))
        Q = 0.5 * (Y - E + R - Lam / mu + bagmax(T, offsets) - Sig / mu)
        R = 0.5 * (E - Y + Q + Lam / mu + bagmax(U, offsets) - Omg / mu)
        Phi = G + b[:, None] - The / mu
        T = Phi.copy()
        for i, js in enumerate(bag_argmax(Phi, offsets)):
            T[np.arange(K), js] = 0.5 * (Phi[np.arange(K), js] + Q[:, i] + Sig[:, i] / mu)
        Psi = Gy + By - Xi / mu
        U = Psi.copy()
        for i, js in enumerate(bag_argmax(Psi, offsets)):
            U[np.arange(K), js] = 0.5 * (Psi[np.arange(K), js] + R[:, i] + Omg[:, i] / mu)
        res_E = E - (Y - Q + R)
        res_Q = Q - bagmax(T, offsets)
        res_T = T - (G + b[:, None])
        res_R = R - bagmax(U, offsets)
        res_U = U - (Gy + By)
        Lam += mu * res_E
        Sig += mu * res_Q
        The += mu * res_T
        Omg += mu * res_R
        Xi += mu * res_U
        res = sum(np.linalg.norm(r) for r in (res_E, res_Q, res_T, res_R, res_U))
        history.append(res)
        if res < tol:
            break
        mu *= rho
    return W, b, np.array(history), it + 1
