"""Folds over bags, the standardizer and one isolated fit: what the protocols are built from."""

import numpy as np
import pytest
import scipy.sparse as sp
from driver_support import load_in_process
from sklearn.base import clone

from automil import plugins
from automil.bags import Bags
from automil.evaluation.folds import bag_folds, fold_digest, fold_splits, repeat_seeds
from automil.evaluation.metrics import FoldScores, fold_scores, mean_std
from automil.evaluation.standardized import Standardized, instance_scaling
from automil.tune.workers.fits import fit_predict


@pytest.fixture
def test_learners(tmp_path, monkeypatch):
    load_in_process(monkeypatch, tmp_path / "records")
    yield plugins.get_learner("centroid")
    plugins.reset()


def random_bags(seed=0, n_bags=40, n_features=3, n_classes=2):
    rng = np.random.default_rng(seed)
    y = np.arange(n_bags) % n_classes
    bags = [rng.normal(5.0, 3.0, size=(int(rng.integers(1, 6)), n_features)) + label for label in y]
    return Bags.from_list(bags, y, names=[f"b{i}" for i in range(n_bags)])


def test_folds_are_stratified_cover_every_bag_once_and_depend_only_on_the_seed():
    y = np.array([0] * 30 + [1] * 12 + [2] * 7)
    folds = bag_folds(y, 6, seed=3)
    assert folds.shape == (len(y),) and set(folds) == set(range(6))
    for label in (0, 1, 2):
        counts = np.bincount(folds[y == label], minlength=6)
        assert counts.max() - counts.min() <= 1
    assert np.array_equal(folds, bag_folds(y, 6, seed=3))
    assert not np.array_equal(folds, bag_folds(y, 6, seed=4))
    assert fold_digest(folds) == fold_digest(folds.copy()) != fold_digest(bag_folds(y, 6, seed=4))


def test_too_few_bags_of_a_class_for_the_folds_is_a_clear_error():
    with pytest.raises(ValueError, match="at least 6 bags of every class; the smallest class has 2"):
        bag_folds(np.array([0] * 10 + [1] * 2), 6, seed=0)


def test_splits_keep_whole_bags_on_one_side_and_leave_the_excluded_fold_out():
    bags = random_bags()
    folds = bag_folds(bags.y, 4, seed=0)
    for exclude in (None, 2):
        splits = fold_splits(folds, exclude=exclude)
        assert len(splits) == (4 if exclude is None else 3)
        tested = np.concatenate([test for _, test in splits])
        assert sorted(tested) == sorted(np.flatnonzero(folds != exclude))
        for train, test in splits:
            assert not set(train) & set(test)
            assert exclude is None or not (folds[train] == exclude).any()
            for part in (train, test):
                subset = bags.subset(part)
                # every bag arrives whole: same instances, same rows, in one piece
                assert np.array_equal(subset.sizes, bags.sizes[part])
                for k, i in enumerate(part):
                    assert np.array_equal(subset[k], bags[i])


def test_repeat_seeds_are_distinct_and_reproducible():
    seeds = repeat_seeds(0, 10)
    assert len(set(seeds)) == 10 and seeds == repeat_seeds(0, 10) and seeds != repeat_seeds(1, 10)


def test_standardizer_scales_training_instances_and_keeps_constant_features():
    bags = random_bags()
    X = bags.X.copy()
    X[:, 1] = 7.0
    mean, scale = instance_scaling(X)
    assert scale[1] == 1.0 and mean[1] == 7.0
    Z = (X - mean) / scale
    assert np.allclose(Z[:, [0, 2]].mean(axis=0), 0) and np.allclose(Z[:, [0, 2]].std(axis=0), 1)


def test_sparse_instances_are_scaled_without_centring():
    X = sp.random(50, 6, density=0.3, random_state=0, format="csr") * 10
    mean, scale = instance_scaling(X)
    assert mean is None
    assert np.allclose(scale[scale != 1], X.toarray().std(axis=0)[scale != 1])


def test_standardized_is_a_clonable_estimator_exposing_the_learners_methods(test_learners):
    model = Standardized(test_learners.build(shrink=0.5))
    assert clone(model).get_params()["estimator__shrink"] == 0.5
    bags = random_bags()
    model.fit(bags)
    assert list(model.classes_) == [0, 1]
    assert model.decision_function(bags).shape == (bags.n_bags, 2)
    assert model.predict(bags.to_list()).shape == (bags.n_bags,)
    assert not hasattr(model, "predict_proba") and not hasattr(model, "witness")
    # The learner saw standardized training instances.
    assert np.allclose(model.estimator_.training_mean_, 0.0, atol=1e-12)


def test_standardizer_never_sees_the_test_fold_planted_shift(test_learners):
    bags = random_bags(n_bags=48)
    folds = bag_folds(bags.y, 4, seed=0)
    train, test = fold_splits(folds)[0]
    X = bags.X.copy()
    X[np.isin(bags.bag_index, test), 0] += 1e4  # a shift only the test fold has
    shifted = bags.with_instances(X)
    out = fit_predict(shifted, "centroid", {}, train, test, return_model=True)
    model = out.model
    train_X = shifted.subset(train).X
    assert np.allclose(model.mean_, train_X.mean(axis=0)) and np.allclose(model.scale_, train_X.std(axis=0))
    assert abs(model.mean_[0]) < 100  # the shifted test fold would have pulled it past 1e3
    assert np.allclose(model.estimator_.training_mean_, 0.0, atol=1e-9)
    assert out.y_pred.shape == (len(test),)


def test_fit_predict_rejects_predictions_of_the_wrong_shape_naming_the_plugin(test_learners):
    bags = random_bags()
    train, test = fold_splits(bag_folds(bags.y, 4, seed=0))[0]
    message = (f"learner 'misshapen' of plugin 'testlearners' predicted an array of shape "
               f"\\({len(test) + 1},\\) for {len(test)} bags")
    with pytest.raises(ValueError, match=message):
        fit_predict(bags, "misshapen", {}, train, test)


def test_fold_scores_flag_one_class_predictions():
    assert fold_scores([0, 1, 1, 0], [1, 1, 1, 1]) == FoldScores(accuracy=0.5, balanced_accuracy=0.5, one_class=True)
    assert not fold_scores([0, 1, 2], [0, 1, 1]).one_class
    assert mean_std([0.5, 0.7]) == pytest.approx((0.6, np.std([0.5, 0.7], ddof=1)))
    assert mean_std([]) == (None, None) and mean_std([0.3]) == (0.3, None)
