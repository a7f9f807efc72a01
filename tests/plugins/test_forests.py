"""The forest plugin: ID3-MI trees, MIRF, BLRT and MIDF against hand-computed cases (docs/algorithms.md 15.3-15.5)."""

import numpy as np
import optuna
import pytest
from sklearn.tree import DecisionTreeClassifier

import automil
from automil import Bags
from automil.checks import witness_bags
from automil_forests.blrt import BLRTClassifier
from automil_forests.blrt_tree import goes_left, split_loss
from automil_forests.id3mi_tree import RADIX_BITS, RADIX_MIN, entropy, radix_sort_pairs
from automil_forests.midf import MIDFClassifier
from automil_forests.mirf import MIRFClassifier, move_threshold, oob_threshold


def hand_bags():
    """15.4.1: one feature; B1 (positive) = {1, 5}, B2 (negative) = {2}, B3 (negative) = {6}."""
    return Bags.from_list([np.array([[1.0], [5.0]]), np.array([[2.0]]), np.array([[6.0]])], [1, 0, 0])


def single_tree(**params):
    """One ID3-MI tree: a forest of one tree on every bag, every feature searched at each node."""
    return MIRFClassifier(n_estimators=1, bootstrap=False, max_features=None, random_state=0, **params)


def test_multi_instance_entropy_counts_bags_per_class():
    # root of 15.4.1: pi = 1 positive bag, nu = 2 negative bags
    assert entropy(np.array([2, 1]), 3) == pytest.approx(-(2 / 3) * np.log2(2 / 3) - (1 / 3) * np.log2(1 / 3))
    assert entropy(np.array([2, 1]), 3) == pytest.approx(0.9183, abs=1e-4)
    assert entropy(np.array([1, 1]), 2) == 1.0
    assert entropy(np.array([0, 4]), 4) == 0.0


@pytest.mark.parametrize("split_weights", ["node", "children"])
def test_hand_example_tree_splits_where_the_gains_say(split_weights):
    # Root gains. "node" (10.2, weights c(child)/3): 1.5 -> 0.0, 3.5 -> -0.415, 5.5 -> 0.2516.
    # "children" (weights c(child)/(c(L)+c(R))): 1.5 -> 0.9183 - 3(0.9183)/4 = 0.2296,
    # 3.5 -> 0.9183 - (2 + 2)/4 = -0.0817, 5.5 -> 0.9183 - 2/3 = 0.2516. Both split at 5.5.
    # Left child {1, 5}, {2} (Info 1): 1.5 and 3.5 tie (0.0 / 0.333 under both weightings), the smaller
    # wins and the split is made at zero gain; then {2, 5} splits at 3.5.
    tree = single_tree(split_weights=split_weights).fit(hand_bags())
    feature, threshold, left, right, value, roots = tree.forest_
    assert roots.tolist() == [0]
    assert threshold[0] == 5.5
    np.testing.assert_allclose(value[0], [2 / 3, 1 / 3])
    assert (left[right[0]], value[right[0]].tolist()) == (-1, [1.0, 0.0])  # {6}: pure negative leaf
    node = left[0]
    np.testing.assert_allclose(value[node], [0.5, 0.5])
    assert threshold[node] == 1.5
    assert value[left[node]].tolist() == [0.0, 1.0]  # {1}: pure positive leaf
    inner = right[node]
    assert threshold[inner] == 3.5
    assert value[left[inner]].tolist() == [1.0, 0.0] and value[right[inner]].tolist() == [0.0, 1.0]
    assert len(feature) == 7
    assert tree.predict(hand_bags()).tolist() == [1, 0, 0]


def test_instance_weights_score_the_hand_example_by_instances():
    # Root, 4 instances: 1.5 -> 0.9183 - (3/4)(0.9183) = 0.2296 ({1} pure; {2, 5, 6} holds every bag),
    # 3.5 -> 0.9183 - (2/4)(1) - (2/4)(1) = -0.0817, 5.5 -> 0.9183 - (3/4)(1) = 0.1683: peeling {1} off wins.
    tree = single_tree(split_weights="instances", max_depth=1).fit(hand_bags())
    feature, threshold, left, right, value, roots = tree.forest_
    assert threshold[0] == 1.5
    assert value[left[0]].tolist() == [0.0, 1.0]


def test_instance_weights_on_bags_of_one_are_id3():
    # one instance per bag: every threshold moves a bag, bag counts are instance counts, so the split is
    # the one scikit-learn's entropy tree makes (distinct integer values: exact midpoints in float32)
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.permutation(60) for _ in range(4)]).astype(float)
    y = (X[:, 2] + 20 * rng.random(60) > 40).astype(int)
    bags = Bags.from_list(list(X[:, None, :]), y)
    reference = DecisionTreeClassifier(criterion="entropy", max_depth=3, random_state=0).fit(X, y).tree_
    feature, threshold, left, right, _, _ = single_tree(split_weights="instances", max_depth=3).fit(bags).forest_

    def same(ours, theirs):
        if left[ours] < 0 or reference.children_left[theirs] < 0:
            return left[ours] < 0 and reference.children_left[theirs] < 0
        return (feature[ours] == reference.feature[theirs] and threshold[ours] == reference.threshold[theirs]
                and same(left[ours], reference.children_left[theirs])
                and same(right[ours], reference.children_right[theirs]))

    assert reference.node_count > 5 and same(0, 0)


def test_sparse_features_are_searched_until_they_turn_constant():
    # mostly zeros (text-like): a feature constant at a node is skipped below it, which must never skip one
    # that still varies. Bags of one, every feature searched: each split has the best ID3 gain at its
    # node, and a leaf holding both classes is one where every feature is constant.
    rng = np.random.default_rng(5)
    X = rng.integers(1, 6, (150, 25)) * (rng.random((150, 25)) < 0.12)
    y = ((X[:, 0] + X[:, 1] > 0) ^ (rng.random(150) < 0.25)).astype(int)  # label noise: a deep tree
    tree = single_tree(split_weights="instances").fit(
        Bags.from_list(list(X[:, None, :].astype(float)), y))
    feature, threshold, left, right, _, _ = tree.forest_

    def info(labels):
        p = np.bincount(labels, minlength=2) / len(labels)
        return -sum(q * np.log2(q) for q in p if q > 0)

    def gain(labels, goes_left):
        share = goes_left.mean()
        return info(labels) - share * info(labels[goes_left]) - (1 - share) * info(labels[~goes_left])

    def check(node, rows):
        if left[node] < 0:
            assert len(np.unique(y[rows])) == 1 or (X[rows] == X[rows[0]]).all()
            return
        best = max(gain(y[rows], X[rows, f] <= v) for f in range(X.shape[1]) for v in np.unique(X[rows, f])[:-1])
        goes_left = X[rows, feature[node]] <= threshold[node]
        assert gain(y[rows], goes_left) == pytest.approx(best)
        check(left[node], rows[goes_left])
        check(right[node], rows[~goes_left])

    assert len(feature) > 40
    check(0, np.arange(len(y)))


@pytest.mark.parametrize("split_weights", ["instances", "children"])
def test_a_bag_drawn_twice_grows_the_tree_of_its_two_copies(split_weights):
    # the bootstrap counts a repeated bag twice from one copy of its instances; the tree must be the one
    # grown on the sample written out, the repeated bag as two bags (all features: no random draw)
    bags = witness_bags(20, 3, seed=4)
    forest = MIRFClassifier(n_estimators=1, max_features=None, split_weights=split_weights, random_state=1,
                            threshold=0.5).fit(bags)
    sample = forest.estimators_samples_[0]
    assert len(np.unique(sample)) < len(sample)  # some bags drawn more than once
    written_out = single_tree(split_weights=split_weights).fit(bags.subset(sample))
    for ours, theirs in zip(forest.forest_, written_out.forest_, strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_radix_sort_orders_keys_as_numpy_s_stable_argsort():
    rng = np.random.default_rng(0)
    for n, high in ((1, 2), (500, 40), (3000, 1 << (RADIX_BITS + 2))):  # many ties; one pass; two passes
        keys = rng.integers(0, high, n).astype(np.int32)
        idx = np.arange(n) * 7
        order = np.argsort(keys, kind="stable")
        n_bits = max(1, int(np.ceil(np.log2(max(high, 2)))))
        radix_sort_pairs(keys, idx, np.empty(n, np.int32), np.empty(n, np.int64),
                         np.empty((1 << RADIX_BITS) + 1, np.int64), n_bits)
        np.testing.assert_array_equal(idx, order * 7)
        assert np.all(np.diff(keys) >= 0)


def _info(counts):
    """Info_multi (10.2) of the class counts of the bags present."""
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log2(p)).sum())


def _gain(bags, goes_left):
    """Gain_multi (10.2) of a split of all instances, children weighted by c(L) + c(R) (``"children"``, not
    MIRF's default ``"instances"``; on the bags of the test below both choose the same root split), and the
    class counts of the bags present on each side."""
    sides = [np.bincount(bags.y[np.unique(bags.bag_index[side])], minlength=2) for side in (goes_left, ~goes_left)]
    root = np.bincount(bags.y, minlength=2)
    return _info(root) - sum(c.sum() * _info(c) for c in sides) / sum(c.sum() for c in sides), sides


def test_a_large_root_takes_the_split_of_largest_gain_found_by_brute_force():
    bags = witness_bags(60, 2, seed=4)
    assert bags.n_instances >= RADIX_MIN, "the root sorts by radix"
    feature, threshold, left, right, value, roots = single_tree().fit(bags).forest_
    gain, sides = _gain(bags, bags.X[:, feature[0]] <= threshold[0])
    best = max(_gain(bags, bags.X[:, f] <= theta)[0] for f in range(bags.n_features)
               for values in [np.unique(bags.X[:, f])] for theta in (values[1:] + values[:-1]) / 2)
    assert gain == pytest.approx(best, abs=1e-12)
    for child, counts in zip((left[0], right[0]), sides, strict=True):
        np.testing.assert_allclose(value[child], counts / counts.sum())


def test_bag_score_is_the_maximum_over_instances_of_the_positive_leaf_probability():
    tree = single_tree().fit(hand_bags())
    # 2 reaches the negative leaf {2}, 5.2 the positive leaf {5}, 7 the negative leaf {6}
    test = [np.array([[2.0]]), np.array([[2.0], [5.2]]), np.array([[7.0], [2.0]])]
    np.testing.assert_allclose(tree.predict_proba(test), [[1, 0], [0, 1], [1, 0]])
    np.testing.assert_array_equal(tree.decision_function(test), tree.predict_proba(test))
    assert tree.witness(test).tolist() == [0, 1, 0]


def test_three_classes_use_normalized_per_class_maxima():
    # one feature, three singleton-bag classes: leaves are pure, and a bag with instances in the
    # leaves of classes 0 and 2 scores s = (1, 0, 1), normalized to (0.5, 0, 0.5)
    bags = Bags.from_list([np.array([[0.0]]), np.array([[1.0]]), np.array([[2.0]])], [0, 1, 2])
    tree = single_tree().fit(bags)
    np.testing.assert_allclose(tree.predict_proba([np.array([[0.0], [2.0]])]), [[0.5, 0.0, 0.5]])


def test_bootstrap_samples_follow_random_state_exactly():
    bags = witness_bags(20)
    forest = MIRFClassifier(n_estimators=5, random_state=11).fit(bags)
    for t, child in enumerate(np.random.SeedSequence(11).spawn(5)):
        expected = np.random.default_rng(child.spawn(2)[0]).integers(0, bags.n_bags, bags.n_bags)
        np.testing.assert_array_equal(forest.estimators_samples_[t], expected)
    other = MIRFClassifier(n_estimators=5, random_state=12).fit(bags)
    assert not np.array_equal(forest.estimators_samples_, other.estimators_samples_)


@pytest.mark.parametrize("kind", [MIRFClassifier, BLRTClassifier])
def test_forest_depends_on_random_state_but_not_on_n_jobs(kind):
    bags, test = witness_bags(20), witness_bags(10, seed=1)
    one = kind(n_estimators=12, max_features=2, random_state=5, n_jobs=1).fit(bags)
    two = kind(n_estimators=12, max_features=2, random_state=5, n_jobs=2).fit(bags)
    for a, b in zip(one.forest_, two.forest_, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(one.predict_proba(test), two.predict_proba(test))
    # feature draws (and BLRT's thresholds) follow the seed: another seed grows other trees
    other = kind(n_estimators=12, max_features=2, random_state=6, n_jobs=2).fit(bags)
    assert len(other.forest_[0]) != len(one.forest_[0]) or not np.array_equal(other.forest_[0], one.forest_[0])


@pytest.mark.parametrize(("kind", "params"), [(MIRFClassifier, {}), (MIRFClassifier, {"tree": "instance"}),
                                               (BLRTClassifier, {})])
def test_a_forest_out_of_time_keeps_its_first_trees_and_says_how_many(kind, params):
    bags, test = witness_bags(20), witness_bags(10, seed=1)
    with automil.time_limit(0.0):  # no time left: the first tree only (no estimate before it ends)
        short = kind(n_estimators=12, random_state=5, n_jobs=1, **params).fit(bags)
    assert short.time_limited_params_ == {"n_estimators": 1}
    again = kind(random_state=5, n_jobs=1, **params, **short.time_limited_params_).fit(bags)
    for a, b in zip(short.forest_, again.forest_, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(short.predict_proba(test), again.predict_proba(test))
    with automil.time_limit(3600.0):  # time for every tree: the same forest as outside a driver
        whole = kind(n_estimators=12, random_state=5, n_jobs=2, **params).fit(bags)
    assert whole.time_limited_params_ == {}
    for a, b in zip(whole.forest_, kind(n_estimators=12, random_state=5, **params).fit(bags).forest_, strict=True):
        np.testing.assert_array_equal(a, b)


def test_midf_grows_its_forests_whole_in_a_driver_fit():
    # the cascade's time is not its forests': they never stop at the fit's time on their own
    with automil.time_limit(0.0):
        cascade = MIDFClassifier(n_estimators=3, max_layers=1, random_state=0).fit(witness_bags(20))
    assert all(len(forest.forest_[-1]) == 3 for model in cascade.layers_[0] for forest in model)
    assert not hasattr(cascade, "time_limited_params_")


def test_max_features_one_still_searches_a_random_feature_per_node():
    bags = witness_bags(20)
    forest = MIRFClassifier(n_estimators=20, max_features=1, random_state=0).fit(bags)
    used = np.unique(forest.forest_[0][forest.forest_[0] >= 0])
    assert len(used) == bags.n_features  # every feature gets drawn somewhere


def test_oob_threshold_is_the_middle_of_the_best_cuts_and_becomes_one_half():
    # noise pushes negative bags' scores up: the best cut lies between 0.92 and 0.95
    assert oob_threshold(np.array([0.9, 0.92, 0.95, 0.97, np.nan]), np.array([0, 0, 1, 1, 1])) == 0.935
    # cuts 0.3 and 0.5 are both right on 3 of 4 bags: the median of the best cuts is the lower
    assert oob_threshold(np.array([0.2, 0.4, 0.6, 0.9]), np.array([0, 1, 0, 1])) == pytest.approx(0.3)
    moved = move_threshold(np.array([[0.1, 0.9], [0.065, 0.935], [0.0, 1.0], [1.0, 0.0]]), 0.935)
    np.testing.assert_allclose(moved[:, 1], [0.9 / 1.87, 0.5, 1.0, 0.0])
    np.testing.assert_allclose(moved.sum(axis=1), 1.0)


def test_mirf_threshold_is_fit_on_out_of_bag_scores_and_decides_predictions():
    train, test = witness_bags(20), witness_bags(20, seed=1)
    forest = MIRFClassifier(random_state=0).fit(train)
    fixed = MIRFClassifier(random_state=0, threshold=0.5).fit(train)
    assert 0.5 < forest.threshold_ < 1 and fixed.threshold_ == 0.5
    raw = fixed.predict_proba(test)[:, 1]  # same trees, the unmoved score
    np.testing.assert_array_equal(forest.predict(test), (raw > forest.threshold_).astype(int))
    assert np.mean(forest.predict(test) == test.y) > np.mean(fixed.predict(test) == test.y)


def test_mirf_witness_finds_the_planted_instance():
    train, test = witness_bags(20), witness_bags(20, seed=1)
    forest = MIRFClassifier(random_state=0).fit(train)
    positive = np.flatnonzero(test.y == 1)
    found = forest.witness(test)[positive] + test.offsets[positive]
    assert np.mean(test.instance_y[found] == 1) >= 0.9


def test_blrt_rule_compares_the_fraction_below_v_strictly_with_r():
    x = np.array([0.0, 1.0, 2.0, 3.0])  # 15.3.1: fraction with x <= 1.5 is 0.5
    assert goes_left(x, 0, 4, 1.5, 0.4)
    assert not goes_left(x, 0, 4, 1.5, 0.5)


def test_blrt_on_a_singleton_bag_is_the_plain_threshold_test():
    x = np.array([1.0, 2.0])
    for r in (0.0, 0.3, 0.99):
        assert goes_left(x, 0, 1, 1.5, r) and not goes_left(x, 1, 2, 1.5, r)


def test_blrt_loss_is_the_weighted_bag_label_entropy():
    # 15.3.2 with 2 positive + 2 negative bags (counts are [negative, positive])
    assert split_loss(np.array([2, 0]), np.array([0, 2])) == 0.0
    assert split_loss(np.array([2, 2]), np.array([0, 0])) == 1.0
    assert split_loss(np.array([1, 2]), np.array([1, 0])) == pytest.approx(0.6887, abs=1e-4)


def test_blrt_forest_score_is_the_mean_of_the_leaf_values_each_bag_reaches():
    train, test = witness_bags(20), witness_bags(10, seed=1)
    forest = BLRTClassifier(n_estimators=7, random_state=0).fit(train)
    feature, threshold, left, right, value, ratio, roots = forest.forest_
    expected = np.zeros((test.n_bags, 2))
    for i, bag in enumerate(test):
        for root in roots:
            node = root
            while left[node] >= 0:
                fraction = np.mean(bag[:, feature[node]] <= threshold[node])
                node = left[node] if fraction > ratio[node] else right[node]
            expected[i] += value[node] / len(roots)
    np.testing.assert_allclose(forest.predict_proba(test), expected)
    assert not hasattr(forest, "_witness")  # bag-level: no witness


def test_blrt_with_defaults_fits_its_training_bags(data_dir):
    # 15.3.3: the reference asserts training accuracy > 0.9 with defaults (on Mutagenesis-2; musk1 here)
    bags = automil.load_bags("musk1")
    assert np.mean(BLRTClassifier(random_state=0).fit(bags).predict(bags) == bags.y) > 0.9


def test_midf_with_one_level_averages_its_fold_models_of_four_forests():
    train, test = witness_bags(12), witness_bags(8, seed=1)
    model = MIDFClassifier(n_estimators=10, max_layers=1, random_state=0).fit(train)
    assert model.n_layers_ == 1 and len(model.layers_) == 1 and len(model.layers_[0]) == 3  # n_folds
    for fold_model in model.layers_[0]:
        kinds = [type(forest).__name__ for forest in fold_model]
        assert kinds == ["MIRFClassifier", "MIRFClassifier", "BLRTClassifier", "BLRTClassifier"]
    proba = model.predict_proba(test)
    forests = [forest for fold_model in model.layers_[0] for forest in fold_model]
    np.testing.assert_allclose(proba, np.mean([f.predict_proba(test) for f in forests], axis=0))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.decision_function(test), proba)


@pytest.mark.parametrize("seed", [0, 1, 4])
def test_midf_keeps_the_best_level_and_predicts_through_the_same_fold_models(seed):
    bags, test = witness_bags(12, 3), witness_bags(6, 3, seed=9)
    model = MIDFClassifier(n_estimators=8, max_layers=3, patience=3, random_state=seed).fit(bags)
    scores = model.layer_scores_
    assert len(scores) == 3
    assert (model.n_layers_ > 1) == (seed == 4)  # seed 4: level 2 beats level 1, so vectors are used
    assert model.n_layers_ == int(np.argmax(scores)) + 1 == len(model.layers_)
    # prediction: each level's instance vectors are the mean over the fold models that the level trained
    X = test.X
    for level, fold_models in enumerate(model.layers_):
        width = bags.n_features + (4 * 3 if level else 0)  # d + 4K after the first level
        assert all(forest.n_features_in_ == width for fold_model in fold_models for forest in fold_model)
        if level < model.n_layers_ - 1:
            singletons = Bags(X, np.arange(len(X) + 1))
            vectors = np.mean([np.hstack([f.predict_proba(singletons) for f in fold_model])
                               for fold_model in fold_models], axis=0)
            X = np.hstack((test.X, vectors))
    last = Bags(X, test.offsets)
    expected = np.mean([f.predict_proba(last) for fold_model in model.layers_[-1] for f in fold_model], axis=0)
    np.testing.assert_allclose(model.predict_proba(test), expected)


def test_midf_tries_levels_until_patience_runs_out():
    bags = witness_bags(12)
    model = MIDFClassifier(n_estimators=5, max_layers=6, patience=2, random_state=0).fit(bags)
    scores = model.layer_scores_
    best = int(np.argmax(scores))
    assert len(scores) == 6 or len(scores) == best + 1 + 2


@pytest.mark.parametrize(("kind", "params", "name"), [
    (MIRFClassifier, {"max_features": 0}, "max_features"),
    (MIRFClassifier, {"max_features": "half"}, "max_features"),
    (MIRFClassifier, {"n_estimators": 0}, "n_estimators"),
    (MIRFClassifier, {"split_weights": "bags"}, "split_weights"),
    (MIRFClassifier, {"threshold": 1.5}, "threshold"),
    (BLRTClassifier, {"n_rules": 0}, "n_rules"),
    (BLRTClassifier, {"max_depth": 0}, "max_depth"),
    (BLRTClassifier, {"n_jobs": 0}, "n_jobs"),
    (MIDFClassifier, {"max_layers": 0}, "max_layers"),
    (MIDFClassifier, {"vectors": "in_bag"}, "vectors"),
])
def test_bad_parameters_raise_naming_the_parameter(kind, params, name):
    with pytest.raises(ValueError, match=name):
        kind(**params).fit(witness_bags(5))


@pytest.mark.parametrize("name", ["mirf", "blrt", "midf"])
def test_search_space_builds_learners_that_fit(name):
    spec = automil.get_learner(name)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(3):
        trial = study.ask()
        trial.set_user_attr("n_features", 5)
        trial.set_user_attr("n_classes", 2)
        params = spec.search_space(trial)
        if name == "midf":
            params = {**params, "n_estimators": 5, "max_layers": 2}
        model = spec.build(**params).fit(witness_bags(6))
        assert model.predict(witness_bags(4, seed=1)).shape == (8,)


def test_an_instance_tree_of_mirf_is_scikit_learns_tree_on_instances_labelled_by_their_bag():
    bags = witness_bags(12, seed=3)
    forest = MIRFClassifier(n_estimators=1, max_features=None, bootstrap=False, tree="instance",
                            random_state=0).fit(bags)
    reference = DecisionTreeClassifier(random_state=0).fit(bags.X, np.repeat(bags.y, bags.sizes))
    np.testing.assert_allclose(forest.instance_scores(bags), reference.predict_proba(bags.X))
    bag_positive = np.maximum.reduceat(reference.predict_proba(bags.X)[:, 1], bags.offsets[:-1])
    np.testing.assert_array_equal(forest.predict(bags), (bag_positive > forest.threshold_).astype(int))


def test_mirf_refuses_an_unknown_tree():
    with pytest.raises(ValueError, match="tree='cart' is invalid"):
        MIRFClassifier(n_estimators=2, tree="cart").fit(witness_bags(4))
