"""The shared kernel module (docs/algorithms.md 1.7): instance kernels, the set kernel and its normalizers."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import pairwise

from automil import kernels


@pytest.fixture
def X():
    return np.random.default_rng(0).normal(size=(9, 4))


@pytest.fixture
def Y():
    return np.random.default_rng(1).normal(size=(6, 4))


def test_instance_kernels_match_scikit_learn_on_dense_and_sparse_input(X, Y):
    expected = {"linear": pairwise.linear_kernel(X, Y),
                "rbf": pairwise.rbf_kernel(X, Y, gamma=0.25),  # "auto" is 1 / n_features
                "poly": pairwise.polynomial_kernel(X, Y, degree=2, gamma=1.0, coef0=1.0)}
    for name, K in expected.items():
        got = kernels.pairwise_kernel(X, Y, name, degree=2)
        got_sparse = kernels.pairwise_kernel(sp.csr_matrix(X), sp.csr_matrix(Y), name, degree=2)
        np.testing.assert_allclose(got, K, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got_sparse, K, rtol=1e-12, atol=1e-12)


def test_gamma_exponential_is_an_exponent_with_an_optional_length_scale(X, Y):
    distance = pairwise.euclidean_distances(X, Y)
    np.testing.assert_allclose(kernels.gamma_exponential_kernel(X, Y), np.exp(-distance**2), rtol=1e-10)
    np.testing.assert_allclose(kernels.gamma_exponential_kernel(X, Y, gamma=1.0, length_scale=3.0),
                               np.exp(-distance / 3.0), rtol=1e-10)
    np.testing.assert_allclose(np.diag(kernels.gamma_exponential_kernel(X, X, gamma=0.5)), 1.0)
    with pytest.raises(ValueError, match="gamma must be in"):
        kernels.gamma_exponential_kernel(X, Y, gamma=2.5)
    with pytest.raises(ValueError, match="length_scale"):
        kernels.gamma_exponential_kernel(X, Y, length_scale=0.0)


def test_bad_kernel_name_and_gamma_are_refused(X):
    with pytest.raises(ValueError, match="unknown kernel 'sigmoid'"):
        kernels.pairwise_kernel(X, X, "sigmoid")
    with pytest.raises(ValueError, match="gamma must be a positive number"):
        kernels.pairwise_kernel(X, X, "rbf", gamma=-1.0)


def _double_sum(bags_a, bags_b, nu_a, nu_b, k):
    return np.array([[k(A, B).sum() / (na * nb) for B, nb in zip(bags_b, nu_b)]
                     for A, na in zip(bags_a, nu_a)])


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
def test_set_kernel_is_the_normalized_double_sum_over_instance_pairs(X, Y, kernel):
    offsets_x, offsets_y = np.array([0, 2, 3, 9]), np.array([0, 4, 6])
    bags_x = [X[a:b] for a, b in zip(offsets_x[:-1], offsets_x[1:])]
    bags_y = [Y[a:b] for a, b in zip(offsets_y[:-1], offsets_y[1:])]

    def k(A, B):
        return kernels.pairwise_kernel(A, B, kernel, gamma=0.3)

    normalizers = {
        "none": (np.ones(3), np.ones(2)),
        "averaging": (np.array([2, 1, 6]), np.array([4, 2])),
        "featurespace": (np.sqrt([k(A, A).sum() for A in bags_x]), np.sqrt([k(B, B).sum() for B in bags_y])),
    }
    for normalization, (nu_x, nu_y) in normalizers.items():
        got = kernels.set_kernel(X, offsets_x, Y, offsets_y, kernel=kernel, normalization=normalization,
                                 gamma=0.3)
        np.testing.assert_allclose(got, _double_sum(bags_x, bags_y, nu_x, nu_y, k), rtol=1e-10)
    self_kernel = kernels.set_kernel(X, offsets_x, kernel=kernel, normalization="featurespace", gamma=0.3)
    np.testing.assert_allclose(np.diag(self_kernel), 1.0, rtol=1e-10)


def test_set_kernel_computed_in_blocks_equals_the_one_shot_result(X, monkeypatch):
    offsets = np.array([0, 2, 3, 7, 9])
    whole = kernels.set_kernel(X, offsets, kernel="rbf", normalization="featurespace")
    monkeypatch.setattr(kernels, "_BLOCK_ROWS", 2)  # every block smaller than the largest bag
    np.testing.assert_allclose(kernels.set_kernel(X, offsets, kernel="rbf", normalization="featurespace"),
                               whole, rtol=1e-12)


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
@pytest.mark.parametrize("cells", [None, 1])
def test_combination_gram_equals_the_dense_product_in_any_blocks(kernel, cells, monkeypatch):
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(9, 4)), rng.normal(size=(7, 4))
    # examples as any weighted sums of instances (bag sums, single instances, a row with no instance)
    R_a = sp.random(5, 9, density=0.5, random_state=4, format="csr")
    R_b = sp.csr_matrix(np.vstack([rng.random(7) * (rng.random(7) < 0.6) for _ in range(4)] + [np.zeros(7)]))
    dense = R_a.toarray() @ kernels.pairwise_kernel(X, Y, kernel, gamma=0.3) @ R_b.toarray().T
    if cells is not None:
        monkeypatch.setattr(kernels, "_BLOCK_CELLS", cells)  # one row of X a block
    got = kernels.combination_gram(X, R_a, Y, R_b, kernel=kernel, gamma=0.3)
    np.testing.assert_allclose(got, dense, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernels.combination_gram(sp.csr_matrix(X), R_a, sp.csr_matrix(Y), R_b,
                                                        kernel=kernel, gamma=0.3), dense, rtol=1e-12, atol=1e-12)


def test_squared_distances_are_exactly_zero_from_a_point_to_itself():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(6, 3)) * np.array([1.0, 1e3, 1e-3])
    D = kernels.squared_distances(X, np.vstack((X, X + 1.0)))
    assert (np.diag(D[:, :6]) == 0.0).all() and (D >= 0).all()
    np.testing.assert_allclose(D[:, 6:], ((X[:, None, :] - X[None, :, :] - 1.0) ** 2).sum(axis=2), rtol=1e-9)


def test_featurespace_bag_with_zero_self_sum_gets_a_zero_row_and_a_warning():
    X = np.array([[1.0, 2.0], [-1.0, -2.0], [0.5, 0.0]])
    with pytest.warns(RuntimeWarning, match=r"bag\(s\) \[0\]"):
        K = kernels.set_kernel(X, np.array([0, 2, 3]), normalization="featurespace")
    np.testing.assert_array_equal(K[0], 0.0)
    assert K[1, 1] == pytest.approx(1.0)
