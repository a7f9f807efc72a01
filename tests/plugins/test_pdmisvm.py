"""pdMISVM (exact, inexact, kernel): the reference checks of docs/algorithms.md 15.2 and the learner's own rules."""

import sys
from pathlib import Path

import numpy as np
import optuna
import pytest
from scipy.optimize import minimize

from automil import Bags
from automil.checks import witness_bags
from automil.kernels import linear_kernel
from automil_datasets.synthetic import make_synthetic_bags
from automil_pdmisvm.kernel import KernelPdMISVMClassifier, class_push_through_eigen, push_through_scores
from automil_pdmisvm.linear import InexactPdMISVMClassifier, PdMISVMClassifier, class_eigen, exact_w
from automil_pdmisvm.spaces import MU_BOUND, kernel_space, linear_space, maxiter_limit

sys.path.insert(0, str(Path(__file__).parent))
from pdmisvm_reference import reference_fit  # noqa: E402

LINEAR = [PdMISVMClassifier, InexactPdMISVMClassifier]
LINEAR_IDS = ["exact", "inexact"]


def toy_bags(kernel=False):
    """The authors' toy bags (15.2.1), or their kernel variant with the +-100 third features (15.2.2)."""
    bags = [np.array([[1, 1, 3], [1, 2, 0], [0, 0, 0]], float), np.array([[1, 2, 4], [2, 2, -2]], float),
            np.array([[3, 3, -5]], float), np.array([[4, 4, -2]], float)]
    if kernel:
        bags[0][0, 2] = bags[1][0, 2] = 100.0
        bags[2][0, 2] = bags[3][0, 2] = -100.0
    return bags, np.array([0, 0, 1, 1])


@pytest.mark.parametrize("cls", LINEAR, ids=LINEAR_IDS)
def test_toy_bags_are_fitted_exactly_with_residuals_below_tol(cls):
    bags, y = toy_bags()
    for seed in range(5):
        model = cls(random_state=seed).fit(bags, y)
        np.testing.assert_array_equal(model.predict(bags), y)
        history = model.residual_history_
        assert model.n_iter_ < model.maxiter and len(history) == model.n_iter_
        assert np.isfinite(history).all() and history[-1] < model.tol <= history[:-1].min()
        assert np.isfinite(model.objective_history_).all() and np.isfinite(model.lagrangian_history_).all()


def test_kernel_toy_bags_are_fitted_exactly():
    bags, y = toy_bags(kernel=True)
    for seed in range(5):
        model = KernelPdMISVMClassifier(random_state=seed).fit(bags, y)
        np.testing.assert_array_equal(model.predict(bags), y)
        assert model.residual_history_[-1] < model.tol


@pytest.mark.parametrize("exact", [True, False], ids=LINEAR_IDS)
def test_fused_iteration_matches_a_plain_transcription_of_the_updates(exact):
    """Same initial draws, then W, b and every residual norm agree with a one-formula-per-line numpy
    transcription of 2.5 to round-off, through convergence."""
    bags = witness_bags(15, 3, seed=4)
    cls = PdMISVMClassifier if exact else InexactPdMISVMClassifier
    W, b, history, n_iter = reference_fit(bags, bags.y, 3, exact=exact, seed=3)
    model = cls(random_state=3).fit(bags)
    assert model.n_iter_ == n_iter
    np.testing.assert_allclose(model.coef_, W, atol=1e-9)
    np.testing.assert_allclose(model.intercept_, b, atol=1e-9)
    np.testing.assert_allclose(model.residual_history_, history, rtol=1e-7, atol=1e-12)


def weston_watkins_objective(W, b, X, y, C):
    """``1/2 ||W||^2 + C sum_i sum_{m != y_i} [1 + f_m(x_i) - f_{y_i}(x_i)]_+`` (15.2.7)."""
    F = X @ W + b
    margins = 1.0 + F - F[np.arange(len(y)), y][:, None]
    margins[np.arange(len(y)), y] = 0.0
    return 0.5 * np.sum(W * W) + C * np.maximum(margins, 0.0).sum()


def weston_watkins_svm(X, y, K, C):
    """Reference Weston-Watkins linear SVM with bias: the primal QP with slacks, solved by SLSQP."""
    n, d = X.shape
    others = np.array([[m for m in range(K) if m != c] for c in y])
    n_w = d * K
    rows = np.arange(n)[:, None]

    def unpack(v):
        return v[:n_w].reshape(d, K), v[n_w:n_w + K], v[n_w + K:].reshape(n, K - 1)

    def objective(v):
        return 0.5 * v[:n_w] @ v[:n_w] + C * v[n_w + K:].sum()

    def gradient(v):
        g = np.full_like(v, C)
        g[:n_w] = v[:n_w]
        g[n_w:n_w + K] = 0.0
        return g

    def slack_constraints(v):  # xi_im >= 1 + f_m - f_y
        W, b, xi = unpack(v)
        F = X @ W + b
        return (xi - 1.0 - F[rows, others] + F[rows[:, 0], y][:, None]).ravel()

    result = minimize(objective, np.zeros(n_w + K + n * (K - 1)), jac=gradient, method="SLSQP",
                      constraints=[{"type": "ineq", "fun": slack_constraints}],
                      bounds=[(None, None)] * (n_w + K) + [(0, None)] * (n * (K - 1)),
                      options={"ftol": 1e-12, "maxiter": 1000})
    assert result.success, result.message
    W, b, _ = unpack(result.x)
    return W, b


@pytest.mark.parametrize("cls", LINEAR, ids=LINEAR_IDS)
def test_singleton_bags_reach_the_weston_watkins_optimum_with_slow_mu_growth(cls):
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 15)
    X = np.array([[0.0, 0.0], [2.5, 0.0], [0.0, 2.5]])[y] + rng.standard_normal((45, 2))
    W_ref, b_ref = weston_watkins_svm(X, y, 3, C=1.0)
    optimum = weston_watkins_objective(W_ref, b_ref, X, y, 1.0)
    bags = [x[None, :] for x in X]
    model = cls(rho=1.01, maxiter=5000).fit(bags, y)
    assert model.n_iter_ < 5000
    reached = weston_watkins_objective(model.coef_, model.intercept_, X, y, 1.0)
    assert optimum <= reached <= 1.01 * optimum
    np.testing.assert_array_equal(model.predict(bags), np.argmax(X @ W_ref + b_ref, axis=1))
    # The default rho stops at a feasible point clearly above the optimum (16.2).
    fast = cls().fit(bags, y)
    assert weston_watkins_objective(fast.coef_, fast.intercept_, X, y, 1.0) > 1.05 * optimum


@pytest.mark.parametrize("cls", LINEAR, ids=LINEAR_IDS)
def test_witness_is_the_planted_instance(cls):
    train, test = make_synthetic_bags(150, 10, 3, seed=0), make_synthetic_bags(60, 10, 3, seed=1)
    model = cls().fit(train)
    predicted = model.predict(test)
    assert np.mean(predicted == test.y) >= 0.95
    planted = np.array([np.flatnonzero(test.instance_y[lo:hi] >= 0)[0]
                        for lo, hi in zip(test.offsets[:-1], test.offsets[1:])])
    right = predicted == test.y
    np.testing.assert_array_equal(model.witness(test)[right], planted[right])


@pytest.mark.parametrize("cls", [*LINEAR, KernelPdMISVMClassifier], ids=[*LINEAR_IDS, "kernel"])
def test_scores_and_witnessed_instances_do_not_depend_on_instance_order(cls):
    train, test = witness_bags(15, 3, seed=0), witness_bags(10, 3, seed=1)
    model = cls(ell="auto", gamma=1.0) if cls is KernelPdMISVMClassifier else cls()
    model.fit(train)
    rng = np.random.default_rng(5)
    orders = [rng.permutation(len(bag)) for bag in test]
    shuffled = [bag[order] for bag, order in zip(test, orders)]
    np.testing.assert_allclose(model.decision_function(shuffled), model.decision_function(test), rtol=1e-12)
    witnessed = [bag[w] for bag, w in zip(test, model.witness(test))]
    witnessed_shuffled = [bag[w] for bag, w in zip(shuffled, model.witness(shuffled))]
    np.testing.assert_array_equal(witnessed_shuffled, witnessed)


def test_decision_function_is_the_bag_max_of_the_linear_scores():
    train = witness_bags(10, 3, seed=0)
    model = PdMISVMClassifier().fit(train)
    assert model.coef_.shape == (train.n_features, 3) and model.intercept_.shape == (3,)
    scores = model.decision_function(train)
    for i, bag in enumerate(train):
        np.testing.assert_allclose(scores[i], (bag @ model.coef_ + model.intercept_).max(axis=0))
        assert model.witness(train)[i] == np.argmax(bag @ model.coef_[:, np.argmax(scores[i])])


@pytest.mark.parametrize("cls", LINEAR, ids=LINEAR_IDS)
def test_two_class_instance_score_is_the_positive_class_margin_over_the_other(cls):
    train, test = make_synthetic_bags(150, 10, 2, seed=0), make_synthetic_bags(60, 10, 2, seed=1)
    model = cls().fit(train)
    class_scores = test.X @ model.coef_ + model.intercept_
    np.testing.assert_allclose(model.instance_scores(test)[:, 1], class_scores[:, 1] - class_scores[:, 0])
    np.testing.assert_allclose(model.instance_scores(test)[:, 0], class_scores[:, 0] - class_scores[:, 1])
    np.testing.assert_allclose(model.decision_function(test)[:, 1], [s.max() for s in np.split(
        class_scores[:, 1], test.offsets[1:-1])])  # the bag scores stay the class scores' maxima


def test_kernel_w_step_with_the_linear_kernel_equals_the_exact_linear_w_step():
    """15.2.5: the push-through identity gives the same instance scores as the d x d normal equations."""
    rng = np.random.default_rng(0)
    K, offsets, codes = 3, np.arange(0, 41, 4), np.arange(10) % 3
    X = rng.standard_normal((40, 4))
    that, uvec, mu = rng.standard_normal((40, K)), rng.standard_normal(40), 0.7
    class_of_row = np.repeat(codes, np.diff(offsets))
    rows = [np.flatnonzero(class_of_row == m) for m in range(K)]
    M = that.copy()
    M[np.arange(40), class_of_row] += uvec
    G_linear = X @ exact_w(X.T @ M, *class_eigen(X, rows), mu)
    G_kernel = np.empty((40, K))
    for m in range(K):
        lam, V, keep = class_push_through_eigen(linear_kernel, X, rows[m], K)
        z = V.T @ np.concatenate((that[:, m], uvec[rows[m]] / np.sqrt(K)))
        push_through_scores((lam, V, keep), z, mu, G_kernel[:, m])
    np.testing.assert_allclose(G_kernel, G_linear, atol=1e-10)


def test_zero_and_duplicated_features_get_the_minimum_norm_weights_in_the_exact_fit():
    """2.8: singular A_m (a standardized constant feature is all zeros; a copied feature): the eigenvalue
    floor keeps the null space out of W, as exact arithmetic would, even as mu grows to ~1e76."""
    train = witness_bags(10, seed=0)
    X = np.column_stack((train.X, np.zeros(train.n_instances), train.X[:, 0]))
    model = PdMISVMClassifier(tol=1e-300).fit(Bags(X, train.offsets, train.y))
    assert model.n_iter_ == model.maxiter  # mu reached 1e-3 * 1.2^999
    assert np.abs(model.coef_[-2]).max() < 1e-12
    np.testing.assert_allclose(model.coef_[-1], model.coef_[0], rtol=1e-8)


def test_mu_overflow_stops_with_a_warning_and_a_finite_model():
    bags, y = toy_bags()
    with pytest.warns(RuntimeWarning, match="mu overflowed"):
        model = PdMISVMClassifier(rho=2.0, maxiter=2000, tol=1e-300).fit(bags, y)
    assert model.n_iter_ < 2000 and np.isfinite(model.coef_).all()
    np.testing.assert_array_equal(model.predict(bags), y)


@pytest.mark.parametrize(("param", "value"), [("C", 0.0), ("mu0", -1.0), ("rho", 1.0), ("maxiter", 0),
                                              ("tol", float("nan"))])
def test_bad_parameters_raise_naming_the_parameter(param, value):
    bags, y = toy_bags()
    with pytest.raises(ValueError, match=param):
        PdMISVMClassifier(**{param: value}).fit(bags, y)


def test_kernel_refuses_gram_matrices_over_the_memory_limit():
    bags, y = toy_bags(kernel=True)
    with pytest.raises(ValueError, match="max_gram_mb"):
        KernelPdMISVMClassifier(max_gram_mb=1e-6).fit(bags, y)
    with pytest.raises(ValueError, match="gamma"):
        KernelPdMISVMClassifier(gamma=2.5).fit(bags, y)


def test_search_space_bounds_maxiter_so_mu_never_overflows():
    base = {"C": 1.0, "mu0": 1e-2, "tol": 1e-6, "gamma": 1.0, "ell_scale": 1.0}
    assert linear_space(optuna.trial.FixedTrial({**base, "rho": 1.2, "maxiter": 1000}))["maxiter"] == 1000
    limit = maxiter_limit(1e-2, 1.5)
    assert 1e-2 * 1.5 ** (limit - 1) <= MU_BOUND < 1e-2 * 1.5 ** limit
    assert maxiter_limit(1e-10, 1.01) == 3000  # the range's own end where mu stays small
    with pytest.warns(UserWarning, match="maxiter"):  # Optuna: a fixed value outside the (bounded) range
        linear_space(optuna.trial.FixedTrial({**base, "rho": 1.5, "maxiter": 3000}))
    trial = optuna.trial.FixedTrial({**base, "rho": 1.2, "maxiter": 1000})
    trial.set_user_attr("n_features", 16)
    assert kernel_space(trial)["ell"] == pytest.approx(4.0)


def test_e_update_is_the_proximal_step_of_the_hinge():
    """15.2.6 with C/mu = 1: Y=+1: S=-0.5 -> -0.5, 0.5 -> 0, 2 -> 1; Y=-1: S=0.5 -> 0.5, -0.5 -> 0, -3 -> -2.
    Six singleton bags of class 0 (Y = +1 in column 0) and 1 (Y = -1 in column 0); S is set through R."""
    from automil_pdmisvm import updates

    codes = np.array([0, 0, 0, 1, 1, 1])
    S = np.array([-0.5, 0.5, 2.0, 0.5, -0.5, -3.0])
    N, K = 6, 2  # one instance per bag, so instance and bag blocks have the same shape

    def zeros():
        return np.zeros((N, K))

    Y = np.where(codes[:, None] == np.arange(K), 1.0, -1.0)
    E, Q, R = zeros(), zeros(), Y.copy()
    R[:, 0] = S - Y[:, 0]  # S = Y - Q + R - Lambda/mu with Q = Lambda = 0
    mu = 2.0
    C = mu * 1.0  # kappa = C/mu = 1
    updates.admm_sweep(np.arange(N + 1), codes, Y, C, mu, mu, 0.0, True, np.zeros(K), zeros(),
                       np.empty((0, 0)), np.zeros(K), False, E, Q, R, zeros(), zeros(),  # E Q R T U
                       zeros(), zeros(), zeros(), zeros(), zeros(),  # Lambda Sigma Omega Theta Xi
                       zeros(), zeros(), zeros(), np.empty(N), np.empty(K), np.empty(K),  # maxT maxU M ...
                       np.empty(updates.N_STATS))
    np.testing.assert_allclose(E[:, 0], [-0.5, 0.0, 1.0, 0.5, 0.0, -2.0])


def initial_w_block(cls, mu):
    """An estimator and state at initialization (random T, U, zero duals) with the W-step's right-hand side
    prepared, and the W-block terms of L_mu as an independent function of W:
    ``1/2||W||^2 + mu/2 ||T - G - b + Theta/mu||^2 + mu/2 ||U - G^y - B^y + Xi/mu||^2``."""
    from automil_pdmisvm import admm, updates

    bags, K = witness_bags(8, 3, seed=2), 3
    est = cls()
    rng = np.random.default_rng(0)
    est._draw_model(bags, K, rng)
    st = admm.ADMMState(bags, bags.y.astype(np.int64), K, rng)
    est._start(st)
    updates.prepare(st.offsets, st.codes, st.T, st.U, st.Theta, st.Xi, st.G, est._b, mu, est.alpha,
                    est.add_onehot, st.M, st.uvec, st.tsum, st.usum, st.maxT, st.maxU)
    X, b, rows = bags.X, est._b, np.repeat(bags.y, bags.sizes)

    def w_block(W):
        G = X @ W
        gy = G[np.arange(len(X)), rows] + b[rows]
        return (0.5 * np.sum(W * W) + 0.5 * mu * np.sum((st.T - G - b + st.Theta / mu) ** 2)
                + 0.5 * mu * np.sum((st.U - gy[:, None] + st.Xi / mu) ** 2))

    return est, st, w_block


def numerical_gradient(f, W, h=1e-6):
    """Central differences, independent of the implementation's formulas."""
    gradient = np.empty_like(W)
    for index in np.ndindex(W.shape):
        step = np.zeros_like(W)
        step[index] = h
        gradient[index] = (f(W + step) - f(W - step)) / (2 * h)
    return gradient


def test_exact_w_step_minimizes_the_w_block_of_the_lagrangian():
    """15.2.3 for W: after the exact step the gradient of the W-block terms vanishes."""
    est, st, w_block = initial_w_block(PdMISVMClassifier, mu=0.5)
    before = np.abs(numerical_gradient(w_block, est.coef_)).max()
    est._w_step(st, 0.5)
    assert np.abs(numerical_gradient(w_block, est.coef_)).max() < 1e-6 * before


def test_inexact_step_is_an_exact_line_search_along_the_negative_gradient():
    """15.2.4: from the initial state, each column moves along -g_m (the gradient of the W-block of L_mu)
    with s_m > 0, and moving the result by +-1e-4 of the step along that line raises the W-block terms."""
    est, st, w_block = initial_w_block(InexactPdMISVMClassifier, mu=0.5)
    W0 = est.coef_.copy()
    gradient = numerical_gradient(w_block, W0)
    est._w_step(st, 0.5)
    W1 = est.coef_.copy()
    for m in range(W0.shape[1]):
        move = W1[:, m] - W0[:, m]
        cosine = move @ gradient[:, m] / (np.linalg.norm(move) * np.linalg.norm(gradient[:, m]))
        assert cosine == pytest.approx(-1.0, abs=1e-8)
        for sign in (1.0, -1.0):
            W = W1.copy()
            W[:, m] += sign * 1e-4 * move
            assert w_block(W) > w_block(W1)
