"""The SVM family plugin: the reference checks of docs/algorithms.md 15.1 and the behaviour each learner promises."""

import subprocess
import sys

import numpy as np
import optuna
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.svm import SVC, LinearSVC

import automil
from automil import Bags
from automil.checks import witness_bags
from automil_svm import margin_solvers, svm_problem
from automil_svm.andrews import MISVM, MiSVM, relabel_positive_bags
from automil_svm.migraph import MiGraph
from automil_svm.nsk import NSK
from automil_svm.sil import SIL
from automil_svm.sparse_mil import SBMIL, SMIL, positive_bag_margins

NAMES = {"sil": SIL, "mi-svm": MiSVM, "MI-SVM": MISVM, "nsk": NSK, "smil": SMIL, "sbmil": SBMIL}
INSTANCE_LEARNERS = (SIL, MiSVM, MISVM, SMIL, SBMIL)


@pytest.fixture(scope="module")
def singletons():
    """Instances with a noisy linear concept, each its own bag."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.7 * rng.normal(size=120) > 0).astype(int)
    return X, y, Bags(X, np.arange(121), y)


def _sklearn_svc(kernel, **kwargs):
    # automil's polynomial kernel is misvm's (1 + x.x')^degree: scikit-learn's with gamma=1, coef0=1.
    return SVC(kernel=kernel, gamma=0.25 if kernel == "rbf" else 1.0, coef0=1.0, degree=3, **kwargs)


def published_rule(learner) -> dict:
    """The bag rule of the papers, a cut at 0 (SIL and sMIL fit their cut by default)."""
    return {"threshold": 0.0} if "threshold" in learner().get_params() else {}


# ---- docs/algorithms.md 15.1 ----------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
@pytest.mark.parametrize("learner", [SIL, MiSVM, MISVM])
def test_singleton_bags_reduce_sil_mi_svm_and_MI_svm_to_scikit_learns_svc(singletons, learner, kernel):
    X, y, bags = singletons
    reference = _sklearn_svc(kernel, C=1.0).fit(X, y)
    model = learner(kernel=kernel, solver="smo", **published_rule(learner)).fit(bags)
    np.testing.assert_array_equal(model.predict(bags), reference.predict(X))
    np.testing.assert_allclose(model.decision_function(bags)[:, 1], reference.decision_function(X), atol=1e-6)
    if learner is MiSVM:  # the only instance of a positive bag is its arg-max: labels never change
        assert model.n_iter_.tolist() == [1]
    if learner is MISVM:  # the bag mean is the instance: the second solve confirms the witnesses
        assert model.n_iter_.tolist() == [2]


@pytest.mark.parametrize("learner", [SIL, MiSVM, MISVM, SBMIL])
def test_linear_cd_solver_on_singleton_bags_is_liblinears_hinge_svm(singletons, learner):
    X, y, bags = singletons
    reference = LinearSVC(C=1.0, loss="hinge", dual=True, random_state=0).fit(X, y)
    model = learner(kernel="linear", **published_rule(learner)).fit(bags)
    np.testing.assert_allclose(model.decision_function(bags)[:, 1], reference.decision_function(X), atol=1e-8)


@pytest.mark.parametrize("normalization", ["none", "averaging", "featurespace"])
def test_nsk_on_singleton_bags_is_a_linear_svm_or_a_cosine_kernel_svm(singletons, normalization):
    X, y, bags = singletons
    Z = X / np.linalg.norm(X, axis=1, keepdims=True) if normalization == "featurespace" else X
    reference = SVC(kernel="linear").fit(Z, y)
    model = NSK(normalization=normalization, solver="smo").fit(bags)
    # The cosine Gram equals Z Z^T only up to rounding, which can change libsvm's path within its KKT
    # tolerance of 1e-3; the other two Grams are the same numbers.
    atol = 5e-3 if normalization == "featurespace" else 1e-6
    np.testing.assert_allclose(model.decision_function(bags)[:, 1], reference.decision_function(Z), atol=atol)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # the reference, as ours
@pytest.mark.parametrize(("normalization", "reduce"), [("averaging", np.mean), ("none", np.sum)])
@pytest.mark.parametrize("solver", ["smo", "cd"])
def test_linear_nsk_is_a_linear_svm_on_bag_means_or_bag_sums(normalization, reduce, solver):
    bags = witness_bags(25, seed=3)
    Z = np.array([reduce(bag, axis=0) for bag in bags])
    reference = (SVC(kernel="linear") if solver == "smo" else
                 LinearSVC(loss="hinge", dual=True, random_state=0)).fit(Z, bags.y)
    model = NSK(normalization=normalization, solver=solver).fit(bags)
    np.testing.assert_allclose(model.decision_function(bags)[:, 1], reference.decision_function(Z), atol=1e-6)


def test_smil_margins_are_two_over_bag_size_minus_one():
    np.testing.assert_allclose(positive_bag_margins([1, 2, 4, 10]), [1.0, 0.0, -0.5, -0.8])


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_smil_on_singleton_bags_is_an_svm_with_costs_divided_by_class_counts(singletons, kernel):
    X, y, bags = singletons
    L_n, X_p = np.count_nonzero(y == 0), np.count_nonzero(y == 1)
    reference = _sklearn_svc(kernel, C=2.0, class_weight={0: 1 / L_n, 1: 1 / X_p}).fit(X, y)
    model = SMIL(kernel=kernel, C=2.0, solver="smo", threshold=0.0).fit(bags)
    np.testing.assert_array_equal(model.predict(bags), reference.predict(X))
    # Both stop at a KKT violation of 1e-3 (libsvm with shrinking), so values agree to about that.
    np.testing.assert_allclose(model.decision_function(bags)[:, 1], reference.decision_function(X), atol=5e-3)


def test_smil_cd_on_singleton_bags_is_liblinear_with_the_same_class_costs(singletons):
    X, y, bags = singletons
    L_n, X_p = np.count_nonzero(y == 0), np.count_nonzero(y == 1)
    reference = LinearSVC(C=2.0, loss="hinge", class_weight={0: 1 / L_n, 1: 1 / X_p}, tol=1e-8,
                          max_iter=100_000).fit(X, y)
    model = SMIL(C=2.0, threshold=0.0).fit(bags)
    np.testing.assert_allclose(model.decision_function(bags)[:, 1], reference.decision_function(X), atol=1e-3)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_sbmil_on_singleton_bags_equals_sil(singletons, kernel):
    _, _, bags = singletons
    np.testing.assert_allclose(SBMIL(kernel=kernel, eta=0.0).fit(bags).decision_function(bags),
                               SIL(kernel=kernel, threshold=0.0).fit(bags).decision_function(bags), atol=1e-12)


def test_mi_svm_label_update_forces_the_arg_max_and_counts_zero_as_positive():
    scores = np.array([-2.0, -0.5, -1.0, 0.0, 3.0, -1.0, 5.0])
    offsets = np.array([0, 3, 6, 7])
    positive = np.array([True, True, False])
    np.testing.assert_array_equal(relabel_positive_bags(scores, positive, offsets),
                                  [-1, 1, -1, 1, 1, -1, -1])


def test_a_fit_with_fixed_examples_reduces_the_kernel_in_blocks_and_never_holds_the_instance_kernel():
    bags = witness_bags(12)
    R = svm_problem.bag_examples(bags, np.arange(bags.n_bags), 1.0 / bags.sizes)
    blocks = svm_problem.TrainingKernel(bags.X, "rbf", 0.5, 3, "smo", keep_gram=False)
    kept = svm_problem.TrainingKernel(bags.X, "rbf", 0.5, 3, "smo")
    np.testing.assert_allclose(blocks.example_gram(R), kept.example_gram(R), rtol=1e-10, atol=1e-12)
    assert blocks._gram is None and kept._gram is not None
    # NSK and miGraph fit that way, to the same model
    for learner in (NSK, MiGraph):
        model = learner(kernel="rbf").fit(bags)
        held = type("Held", (learner,), {"_fixed_examples": False})(kernel="rbf").fit(bags)
        np.testing.assert_allclose(model.decision_function(bags), held.decision_function(bags), atol=1e-8)


def test_an_instance_scorer_scores_in_blocks_of_bounded_cells_the_same_as_at_once(monkeypatch):
    rng = np.random.default_rng(0)
    U, X, beta = rng.normal(size=(50, 3)), rng.normal(size=(70, 3)), rng.normal(size=50)
    scorer = svm_problem.InstanceScorer("rbf", 0.5, 3, 0.25, U=U, beta=beta)
    monkeypatch.setattr(automil.kernels, "_BLOCK_CELLS", 50 * 7)  # 7 rows a block against 50 support instances
    assert len(list(automil.kernels.row_blocks(70, 50))) == 10
    np.testing.assert_allclose(scorer(X), automil.kernels.rbf_kernel(X, U, 0.5) @ beta + 0.25, rtol=1e-12)


@pytest.mark.parametrize("learner", list(NAMES.values()))
def test_two_classes_train_one_model_with_columns_minus_f_and_f(learner):
    bags = witness_bags(15, seed=1)
    model = learner().fit(bags)
    assert len(model.models_) == 1
    scores = model.decision_function(bags)
    np.testing.assert_array_equal(scores[:, 0], -scores[:, 1])
    three = learner().fit(witness_bags(10, 3, seed=2))
    assert len(three.models_) == 3


# ---- the margin solvers against a dense QP ---------------------------------------------------------
def _qp_dual(Q, rho, C, t=None):
    """min 1/2 a'Qa - rho'a over the box (and t'a = 0), by SciPy's SLSQP: slow, exact enough here."""
    constraints = [] if t is None else [{"type": "eq", "fun": lambda a: t @ a, "jac": lambda a: t}]
    result = minimize(lambda a: 0.5 * a @ Q @ a - rho @ a, np.zeros(len(rho)), jac=lambda a: Q @ a - rho,
                      bounds=list(zip(np.zeros(len(C)), C)), constraints=constraints, method="SLSQP",
                      options={"ftol": 1e-12, "maxiter": 1000})
    return result.fun


def _margin_problem(seed=0, m=40):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(m, 3))
    t = np.where(Z[:, 0] + 0.3 * rng.normal(size=m) > 0, 1.0, -1.0)
    rho = np.where(t > 0, rng.choice([1.0, 0.0, -0.5], size=m), 1.0)
    C = rng.uniform(0.2, 2.0, size=m)
    return Z, t, rho, C


def test_smo_reaches_the_optimum_of_the_dual_with_per_example_margins():
    Z, t, rho, C = _margin_problem()
    G = Z @ Z.T
    alpha, b, _ = margin_solvers.smo(G, t, rho, C, tol=1e-6)
    Q = G * np.outer(t, t)
    assert t @ alpha == pytest.approx(0.0, abs=1e-10)
    assert (alpha >= 0).all() and (alpha <= C).all()
    ours = 0.5 * alpha @ Q @ alpha - rho @ alpha
    assert ours <= _qp_dual(Q, rho, C, t) + 1e-6
    free = (alpha > 1e-8) & (alpha < C - 1e-8)
    f = G @ (alpha * t) + b
    np.testing.assert_allclose(t[free] * f[free], rho[free], atol=1e-4)  # KKT: free examples sit on rho


def test_dual_cd_reaches_the_optimum_of_the_bias_as_feature_dual():
    Z, t, rho, C = _margin_problem(seed=1)
    Q = (Z @ Z.T + 1.0) * np.outer(t, t)
    w, b, alpha, _ = margin_solvers.dual_cd(Z, t, rho, C, tol=1e-8, max_epochs=100_000)
    np.testing.assert_allclose(w, Z.T @ (alpha * t), atol=1e-10)
    assert b == pytest.approx(alpha @ t)
    assert 0.5 * alpha @ Q @ alpha - rho @ alpha <= _qp_dual(Q, rho, C) + 1e-6


# ---- behaviour -------------------------------------------------------------------------------------
@pytest.mark.parametrize("learner", INSTANCE_LEARNERS)
def test_witness_is_the_planted_instance_in_most_positive_bags(learner):
    train, test = witness_bags(30, seed=0), witness_bags(30, seed=1)
    model = learner().fit(train)
    position = np.arange(test.n_instances) - test.offsets[test.bag_index]
    planted = np.add.reduceat(test.instance_y * position, test.offsets[:-1])
    positive = test.y == 1
    assert np.mean(model.witness(test)[positive] == planted[positive]) >= 0.9


def test_nsk_is_bag_level_and_has_no_witness():
    bags = witness_bags(10)
    with pytest.raises(AttributeError, match="bag-level"):
        NSK().fit(bags).witness(bags)


@pytest.mark.parametrize("learner", list(NAMES.values()))
def test_sparse_instances_give_the_same_model_as_dense(learner):
    train, test = witness_bags(15, seed=4), witness_bags(10, seed=5)
    dense = learner().fit(train).decision_function(test)
    sparse_train = Bags(sp.csr_matrix(train.X), train.offsets, train.y)
    sparse_test = Bags(sp.csr_matrix(test.X), test.offsets)
    np.testing.assert_allclose(learner().fit(sparse_train).decision_function(sparse_test), dense, atol=1e-8)


@pytest.mark.parametrize("learner", list(NAMES.values()))
def test_fitted_models_survive_pickling(learner):
    import pickle

    train, test = witness_bags(10, seed=8), witness_bags(5, seed=9)
    model = learner(kernel="rbf").fit(train)
    copy = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(copy.decision_function(test), model.decision_function(test))


@pytest.mark.parametrize("learner", [SIL, MiSVM, NSK, SBMIL])
def test_scale_C_divides_C_by_the_number_of_examples(learner, singletons):
    _, _, bags = singletons
    scaled = learner(C=float(bags.n_bags), scale_C=True, solver="smo").fit(bags).decision_function(bags)
    np.testing.assert_allclose(scaled, learner(solver="smo").fit(bags).decision_function(bags), atol=1e-8)


def test_balanced_class_weight_on_singletons_is_scikit_learns_balanced(singletons):
    X, _, _ = singletons
    y = (X[:, 0] > 0.8).astype(int)  # about one positive in five
    bags = Bags(X, np.arange(len(X) + 1), y)
    reference = SVC(kernel="linear", class_weight="balanced").fit(X, y)
    model = SIL(class_weight="balanced", solver="smo", threshold=0.0).fit(bags)
    np.testing.assert_allclose(model.decision_function(bags)[:, 1], reference.decision_function(X), atol=1e-6)


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_MI_svm_starts_from_the_mean_of_the_raw_instances_as_andrews_et_al(kernel):
    """Andrews et al.: a positive bag starts as phi(mean of its instances). One solve (max_iters=1) is
    therefore an SVM on the negative instances and the positive bags' raw means."""
    bags = witness_bags(12, seed=3)
    negative_rows = bags.instance_rows(np.flatnonzero(bags.y == 0))
    positive = np.flatnonzero(bags.y == 1)
    means = np.array([bags[i].mean(axis=0) for i in positive])
    Z = np.vstack((bags.X[negative_rows], means))
    t = np.r_[np.zeros(len(negative_rows)), np.ones(len(positive))]
    reference = _sklearn_svc(kernel, C=1.0, tol=1e-6).set_params(gamma=0.2 if kernel == "rbf" else 1.0).fit(Z, t)
    model = MISVM(kernel=kernel, max_iters=1, solver="smo", gamma=0.2).fit(bags)
    # libsvm stops at a KKT violation of 1e-3 in our solve, 1e-6 in the reference: values agree to ~1e-2
    got = model.models_[0](bags.X)
    np.testing.assert_allclose(got, reference.decision_function(bags.X), atol=5e-2)
    other = MISVM(kernel=kernel, max_iters=1, solver="smo", gamma=0.2, init="feature_mean").fit(bags)
    assert np.abs(other.models_[0](bags.X) - got).max() > 0.5, "the feature-space mean is another start"


def test_iteration_cap_stops_MI_svm_and_reports_it():
    bags = witness_bags(20, seed=6)
    model = MISVM(max_iters=1).fit(bags)
    assert model.n_iter_.tolist() == [1] and model.converged_.tolist() == [False]
    free = MISVM().fit(bags)
    assert free.converged_.all() and (free.n_iter_ >= 2).all()


@pytest.mark.parametrize("learner", [MiSVM, MISVM])
@pytest.mark.parametrize("restarts", [0, 2])
def test_a_heuristic_out_of_time_keeps_its_last_svm_and_says_how_far_it_got(learner, restarts):
    bags, test = witness_bags(20, seed=6), witness_bags(10, seed=7)
    with automil.time_limit(0.0):  # no time left: the first run stops after its first solve, no restart follows
        short = learner(restarts=restarts, random_state=0).fit(bags)
    assert short.time_limited_params_ == {"max_iters": 1, "restarts": 0}
    assert short.n_iter_.tolist() == [1] and short.converged_.tolist() == [False]
    again = learner(**{"restarts": restarts, "random_state": 0, **short.time_limited_params_}).fit(bags)
    np.testing.assert_array_equal(short.decision_function(test), again.decision_function(test))
    with automil.time_limit(3600.0):  # time for every solve: the fit outside a driver
        whole = learner(restarts=restarts, random_state=0).fit(bags)
    assert whole.time_limited_params_ == {} and whole.converged_.all()
    np.testing.assert_array_equal(whole.decision_function(test),
                                  learner(restarts=restarts, random_state=0).fit(bags).decision_function(test))


@pytest.mark.parametrize("learner", [MiSVM, MISVM])
def test_restarts_keep_the_run_with_the_smallest_objective_and_are_seeded(learner):
    bags = witness_bags(20, seed=7)
    single = learner().fit(bags)
    restarted = learner(restarts=4, random_state=0).fit(bags)
    assert (restarted.objective_ <= single.objective_).all()
    again = learner(restarts=4, random_state=0).fit(bags)
    np.testing.assert_array_equal(again.decision_function(bags), restarted.decision_function(bags))


def test_objective_is_the_primal_of_the_last_svm(singletons):
    X, y, bags = singletons
    model = MiSVM(kernel="rbf", solver="smo").fit(bags)  # singletons: one solve of the plain SVM
    reference = SVC(kernel="rbf", gamma=0.25).fit(X, y)
    t = np.where(y == 1, 1.0, -1.0)
    K = np.exp(-0.25 * ((X[:, None] - X[None]) ** 2).sum(-1))
    a = np.zeros(len(X))
    a[reference.support_] = reference.dual_coef_[0]
    primal = 0.5 * a @ K @ a + np.maximum(0.0, 1.0 - t * reference.decision_function(X)).sum()
    assert model.objective_[0] == pytest.approx(primal, rel=1e-6)


@pytest.mark.parametrize(("learner", "params", "message"), [
    (SIL, {"kernel": "sigmoid"}, "kernel must be one of"),
    (SIL, {"C": -1.0}, "C must be a positive number"),
    (SIL, {"kernel": "rbf", "solver": "cd"}, "solver='cd'"),
    (SIL, {"gamma": "scale"}, "gamma must be"),
    (SIL, {"class_weight": {0: 1}}, "class_weight"),
    (MiSVM, {"max_iters": 0}, "max_iters"),
    (MISVM, {"restarts": -1}, "restarts"),
    (NSK, {"normalization": "max"}, "normalization"),
    (SMIL, {"bag_score": "median"}, "bag_score"),
    (SBMIL, {"eta": 1.5}, "eta"),
])
def test_bad_parameters_raise_value_errors_naming_them(learner, params, message):
    with pytest.raises(ValueError, match=message):
        learner(**params).fit(witness_bags(5))


def test_a_kernel_matrix_over_the_memory_limit_is_refused_with_advice(monkeypatch):
    monkeypatch.setattr(svm_problem, "MAX_GRAM_BYTES", 1000)
    with pytest.raises(ValueError, match="use the linear kernel"):
        SIL(kernel="rbf").fit(witness_bags(10))


def test_the_seven_learners_are_registered_with_their_literature_names():
    specs = {name: spec for name, spec in automil.learners().items() if spec.plugin == "svm"}
    assert {name: spec.estimator for name, spec in specs.items()} == {**NAMES, "migraph": MiGraph}
    assert "lower-case" in specs["mi-svm"].description and "upper-case" in specs["MI-SVM"].description
    assert [name for name, spec in specs.items() if not spec.witness] == ["nsk", "migraph"]
    assert all(spec.multiclass for spec in specs.values())
    # miGraph's graph weights are a numba loop over dense rows
    assert [name for name, spec in specs.items() if not spec.sparse] == ["migraph"]


def test_importing_the_plugin_loads_neither_scikit_learn_nor_numba():
    code = "import sys, automil_svm; print('sklearn' in sys.modules or 'numba' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


@pytest.mark.parametrize("name", list(NAMES))
def test_search_space_samples_buildable_parameters_with_gamma_over_d(name):
    spec = automil.get_learner(name)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    bags = witness_bags(6)
    kernels_seen = set()
    for _ in range(12):
        trial = study.ask()
        trial.set_user_attr("n_features", bags.n_features)
        trial.set_user_attr("n_classes", 2)
        params = spec.search_space(trial)
        assert 1e-3 <= params["C"] <= 1e3
        kernels_seen.add(params["kernel"])
        if params["kernel"] == "rbf":
            assert params["gamma"] == pytest.approx(trial.params["g"] / bags.n_features)
        spec.build(**params).fit(bags)
        study.tell(trial, 0.0)
    assert kernels_seen == {"linear", "rbf", "poly"}
