"""The pdMISVM multi-block ADMM loop shared by the exact, inexact and kernel variants (docs/algorithms.md 2.3-2.5).

The variants differ only in how the W-step turns the state into the instance scores ``G = W^T X`` and in
how they score new bags; everything else (b, E, Q, R, T, U, residuals, duals, stopping, the mu schedule)
is this loop. State arrays are allocated once per fit and updated in place.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from automil import BagClassifier, bag_max, witness
from automil_pdmisvm import updates
from automil_pdmisvm.updates import admm_sweep, prepare


class ADMMState:
    """Every array of one fit: data layout, primal blocks, duals and the scratch of the W-step.

    Shapes follow docs/algorithms.md 2.3 transposed to row-major: instance blocks ``(n, K)``, bag blocks
    ``(N, K)``. ``M`` and ``uvec`` hold the W-step right-hand side, ``tsum``/``usum`` the b-step sums,
    ``maxT``/``maxU`` bagmax(T)/bagmax(U); all are refreshed by :func:`updates.admm_sweep`.
    """

    def __init__(self, bags, codes, n_classes, rng):
        N, n, K = bags.n_bags, bags.n_instances, n_classes
        self.X, self.offsets, self.codes, self.K = bags.X, bags.offsets, codes, K
        self.class_sizes = np.bincount(np.repeat(codes, bags.sizes), minlength=K).astype(np.float64)
        self.Y = np.where(codes[:, None] == np.arange(K), 1.0, -1.0)
        # 2.4: E, Q, R, T, U standard normal (drawn after the variant's own W/b draws), duals zero.
        self.E, self.Q, self.R = (rng.standard_normal((N, K)) for _ in range(3))
        self.T, self.U = (rng.standard_normal((n, K)) for _ in range(2))
        self.Lambda, self.Sigma, self.Omega = (np.zeros((N, K)) for _ in range(3))
        self.Theta, self.Xi = np.zeros((n, K)), np.zeros((n, K))
        self.G = np.zeros((n, K))  # the linear variants fill it; the kernel W-step writes it before use
        self.M = np.empty((n, K))
        self.uvec = np.empty(n)
        self.maxT, self.maxU = np.empty((N, K)), np.empty((N, K))
        self.tsum, self.usum = np.empty(K), np.empty(K)
        self.stats = np.zeros(updates.N_STATS)

    def instance_rows(self, m):
        """Row indices of ``P_m``, the instances of the bags of class m."""
        return np.flatnonzero(np.repeat(self.codes == m, np.diff(self.offsets)))


class PdMISVMBase(BagClassifier):
    """Common fit loop; subclasses implement the W-step and bag scoring.

    A subclass provides ``_draw_model(bags, K, rng)`` (its own first draws: W and b, or b), ``_start(state)``
    (precompute; fill ``state.G``), ``_w_step(state, mu)`` (update W and ``state.G``, return
    ``1/2 ||W||^2``), ``_score_sums(state)`` (``sum_j G_{jm}`` and ``sum_{j in P_m} G_{jm}`` for the
    b-step), ``_snapshot()``/``_restore()`` (keep the last finite model), ``_finish(state, mu, finite)``
    (final fitted attributes) and ``_class_scores(bags)``. Class attributes: ``alpha`` (0 when the
    W-step regresses onto ``T^``, 1 when it needs the residual ``T~``), ``add_onehot`` (fold the U part
    into ``M``), ``update_G`` (the sweep applies ``G -= s * XG``).
    """

    alpha = 0.0
    add_onehot = True
    update_G = False

    def _check_params(self):
        for name in ("C", "mu0", "tol"):
            value = getattr(self, name)
            if not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
                raise ValueError(f"{type(self).__name__}: parameter {name} must be a positive finite number, "
                                 f"got {value!r}")
        if not isinstance(self.rho, numbers.Real) or not self.rho > 1:
            raise ValueError(f"{type(self).__name__}: parameter rho must be > 1 (mu grows by rho each "
                             f"iteration), got {self.rho!r}")
        if not isinstance(self.maxiter, numbers.Integral) or self.maxiter < 1:
            raise ValueError(f"{type(self).__name__}: parameter maxiter must be a positive integer, "
                             f"got {self.maxiter!r}")

    def _fit(self, bags, y):
        self._check_params()
        K = len(self.classes_)
        rng = np.random.default_rng(self.random_state)
        self._draw_model(bags, K, rng)
        st = ADMMState(bags, y, K, rng)
        self._start(st)
        # The iteration's products have K columns: they stream X and are bandwidth-bound, so a second
        # BLAS thread gains little on an idle machine, and on a loaded one (parallel trials) it made whole
        # fits 4x slower (measured). One thread for the loop; the set-up above keeps all of them.
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            mu, stopped = self._iterate(st)
        if stopped:
            warnings.warn(f"{type(self).__name__}: {stopped}; keeping the last finite model. Lower rho or "
                          "maxiter.", RuntimeWarning, stacklevel=3)
        self._finish(st, mu, finite=stopped is None or stopped.startswith("mu"))
        self.intercept_ = self._b.copy()

    def _iterate(self, st):
        """Algorithms.md 2.5 until ``res < tol``, ``maxiter``, or a non-finite value; returns the final mu
        and why the loop stopped early (``None`` when it did not)."""
        K, n = st.K, st.X.shape[0]
        denominator = n + K * st.class_sizes  # 2.5 step 2 (2.9.1: instance counts)
        mu, rho, C = float(self.mu0), float(self.rho), float(self.C)
        prepare(st.offsets, st.codes, st.T, st.U, st.Theta, st.Xi, st.G, self._b, mu, self.alpha,
                self.add_onehot, st.M, st.uvec, st.tsum, st.usum, st.maxT, st.maxU)
        history = np.full((3, self.maxiter), np.nan)
        dummy = np.empty((0, 0))
        stopped = None
        for k in range(self.maxiter):
            self._snapshot()
            half_w2 = self._w_step(st, mu)                                      # step 1
            gsum, gysum = self._score_sums(st)
            self._b[:] = (st.tsum - gsum + st.usum - K * gysum) / denominator   # step 2
            mu_next = rho * mu
            admm_sweep(st.offsets, st.codes, st.Y, C, mu, mu_next if np.isfinite(mu_next) else mu,
                       self.alpha, self.add_onehot, self._b, st.G, self._XG if self.update_G else dummy,
                       self._s if self.update_G else st.tsum, self.update_G, st.E, st.Q, st.R, st.T, st.U,
                       st.Lambda, st.Sigma, st.Omega, st.Theta, st.Xi, st.maxT, st.maxU, st.M, st.uvec,
                       st.tsum, st.usum, st.stats)                               # steps 3-9
            sq = st.stats[[updates.SQ_E, updates.SQ_Q, updates.SQ_T, updates.SQ_R, updates.SQ_U]]
            res = float(np.sqrt(sq).sum())                                       # step 10
            history[:, k] = (res, half_w2 + C * st.stats[updates.HINGE],
                             half_w2 + st.stats[updates.LOSS_E] + 0.5 * mu * st.stats[updates.PENALTY])
            if not np.isfinite(res) or not np.isfinite(half_w2):
                self._restore()
                stopped = f"an iterate became non-finite at iteration {k + 1}"
                break
            if res < self.tol:
                break
            if not np.isfinite(mu_next):  # 2.8: mu is never capped; stop before it overflows
                stopped = f"mu overflowed after iteration {k + 1} (mu0 * rho^k > 1.8e308)"
                break
            mu = mu_next                                                         # step 11
        self.n_iter_ = k + 1
        self.residual_history_, self.objective_history_, self.lagrangian_history_ = history[:, :k + 1]
        return mu, stopped

    def _class_scores(self, bags):
        """``W^T x + b`` for every instance of ``bags``, shape ``(n_instances, K)``."""
        raise NotImplementedError

    def _instance_scores(self, bags):
        """The class scores; for two classes the positive class's margin over the other's, ``s_1 - s_0``: a
        witness of class 1 is an instance that class 1 scores high *and* class 0 does not, whereas class 1's
        column alone also rises with instances that score high for both classes (noise of a large norm)."""
        scores = self._class_scores(bags)
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def _decision_function(self, bags):
        return bag_max(bags.offsets, self._class_scores(bags))[0]

    def _witness(self, bags):
        """Position of the instance with the largest score for the predicted class (2.1)."""
        return witness(bags.offsets, self._class_scores(bags))
