"""The embedded-space learners (automil_embedding): each embedding on tiny bags whose result is known by
hand, sparse bags against their dense twins, MILES witnesses, and every search-space point fits."""

import numpy as np
import optuna
import pytest
import scipy.sparse as sp
from sklearn.mixture import GaussianMixture

import automil
from automil import Bags
from automil.checks import witness_bags
from automil_embedding.coding import fisher_vector, vlad
from automil_embedding.embedded import power_l2_normalize
from automil_embedding.miles import MILES, nearest_distances
from automil_embedding.statistics import bag_statistics

# bag 0: two instances, bag 1: one instance, bag 2: a negative value and zeros (implicit zeros when sparse)
TINY = Bags(np.array([[1.0, 2.0], [3.0, 0.0], [5.0, 5.0], [-1.0, 0.0], [0.0, 2.0]]), [0, 2, 3, 5], [0, 1, 0])


def test_bag_statistics_of_tiny_bags_are_the_hand_computed_ones():
    Z = bag_statistics(TINY, ("mean", "max", "min", "std"))
    np.testing.assert_allclose(Z, [
        # mean          max         min          std
        [2.0, 1.0, 3.0, 2.0, 1.0, 0.0, 1.0, 1.0],
        [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 0.0, 0.0],
        [-0.5, 1.0, 0.0, 2.0, -1.0, 0.0, 0.5, 1.0]])


def test_sparse_bag_statistics_count_the_implicit_zeros():
    sparse = Bags(sp.csr_matrix(TINY.X), TINY.offsets, TINY.y)
    for statistics in (("mean",), ("max",), ("min",), ("std",), ("mean", "max", "min", "std")):
        Z = bag_statistics(sparse, statistics)
        assert sp.issparse(Z)
        np.testing.assert_allclose(Z.toarray(), bag_statistics(TINY, statistics), err_msg=str(statistics))


def test_bag_statistics_reject_an_unknown_statistic():
    with pytest.raises(ValueError, match="median"):
        bag_statistics(TINY, ("mean", "median"))


def test_bag_stats_on_sparse_bags_gives_the_dense_scores():
    # the linear models are left out: their scaler cannot centre sparse statistics, so they differ slightly
    train, test = witness_bags(15), witness_bags(10, seed=1)
    sparse_train, sparse_test = (Bags(sp.csr_matrix(b.X), b.offsets, b.y) for b in (train, test))
    for classifier in ("random-forest", "hist-gradient-boosting", "rbf-svm"):
        model = automil.get_learner("bag-stats").build(classifier=classifier, n_estimators=20, max_iter=20)
        dense = model.fit(train).decision_function(test)
        np.testing.assert_allclose(model.fit(sparse_train).decision_function(sparse_test), dense, atol=1e-8,
                                   err_msg=classifier)


def test_vlad_of_one_codeword_is_the_sum_of_residuals():
    centers = np.array([[1.0, 1.0]])
    codes = vlad(TINY, centers, np.zeros(TINY.n_instances, dtype=np.int64))
    np.testing.assert_allclose(codes, [[2.0, 0.0], [4.0, 4.0], [-3.0, 0.0]])


def test_vlad_keeps_each_codewords_residuals_apart():
    centers = np.array([[0.0, 0.0], [4.0, 4.0]])
    codes = vlad(TINY, centers, np.array([0, 0, 1, 0, 0]))
    np.testing.assert_allclose(codes, [[4.0, 2.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0], [-1.0, 2.0, 0.0, 0.0]])


def test_fisher_vector_of_a_standard_normal_component_is_the_bag_moments():
    # one component, mean 0, variance 1, weight 1: the gradients are mean(x) and (mean(x^2) - 1) / sqrt(2)
    mixture = GaussianMixture(1, covariance_type="diag").fit(TINY.X)
    mixture.means_, mixture.covariances_ = np.zeros((1, 2)), np.ones((1, 2))
    codes = fisher_vector(TINY, mixture)
    mean = bag_statistics(TINY, ("mean",))
    second = np.vstack([np.mean(bag ** 2, axis=0) for bag in TINY])
    np.testing.assert_allclose(codes, np.hstack((mean, (second - 1) / np.sqrt(2))))


def test_power_l2_normalization():
    np.testing.assert_allclose(power_l2_normalize(np.array([[4.0, -9.0], [0.0, 0.0]])),
                               [[2 / np.sqrt(13), -3 / np.sqrt(13)], [0.0, 0.0]])


def test_miles_similarity_of_a_known_instance():
    concepts = np.array([[3.0, 0.0], [1.0, 2.0]])
    distances = nearest_distances(TINY, concepts)
    # bag 0 holds both concepts; bag 1 is (5, 5): 4 + 25 and 16 + 9; bag 2: min(16, 9 + 4) and min(4 + 4, 1)
    np.testing.assert_allclose(distances, [[0.0, 0.0], [29.0, 25.0], [13.0, 1.0]])
    # s = exp(-gamma ||x - c||^2 / n_features)
    similarity = MILES(gamma=0.5)._similarity(TINY, concepts)
    np.testing.assert_allclose(similarity, np.exp(-0.25 * distances))
    assert similarity[0, 0] == 1.0


def test_miles_sparse_bags_give_the_dense_scores():
    train, test = witness_bags(15), witness_bags(10, seed=1)
    model = automil.get_learner("miles").build()
    dense = model.fit(train).decision_function(test)
    sparse = model.fit(Bags(sp.csr_matrix(train.X), train.offsets, train.y)).decision_function(
        Bags(sp.csr_matrix(test.X), test.offsets))
    np.testing.assert_allclose(sparse, dense, atol=1e-8)


def test_miles_witness_finds_the_planted_instance():
    train, test = witness_bags(30), witness_bags(30, seed=1)
    model = automil.get_learner("miles").build().fit(train)
    witnesses = model.witness(test)
    positive = np.flatnonzero((model.predict(test) == 1) & (test.y == 1))
    planted = [int(np.argmax(test.instance_y[test.offsets[i]:test.offsets[i + 1]])) for i in positive]
    assert len(positive) >= 20
    assert np.mean(witnesses[positive] == planted) >= 0.9


def test_miles_samples_at_most_max_concepts():
    bags = witness_bags(20)
    model = MILES(max_concepts=10, random_state=0).fit(bags)
    assert 0 < model.concepts_.shape[0] <= 10
    assert model.coef_.shape == (2, model.concepts_.shape[0])


@pytest.mark.parametrize("learner", ["bag-stats", "miles", "mivlad", "mifv"])
def test_every_point_of_the_search_space_fits(learner):
    # random points, two and three classes; a point that cannot fit would fail a tuning trial
    spec = automil.get_learner(learner)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for n_classes in (2, 3, 2, 3, 2, 3):
        bags = witness_bags(6, n_classes)
        trial = study.ask()
        trial.set_user_attr("n_features", bags.n_features)
        trial.set_user_attr("n_classes", n_classes)
        params = spec.search_space(trial)
        # more trees or boosting rounds change nothing here but the test's time
        params.update({size: min(params[size], 30) for size in ("n_estimators", "max_iter") if size in params})
        model = spec.build(**params).fit(bags)
        assert model.decision_function(bags).shape == (bags.n_bags, n_classes)
