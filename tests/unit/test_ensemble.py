"""Ensemble selection on plain arrays: calibration, the greedy selection with replacement, the estimator."""

import pickle

import numpy as np
import pytest

from automil.evaluation.metrics import score
from automil.evaluation.prediction import bag_scores
from automil.tune.final.ensemble_row import NESTED_SCORES, ScoreKey, loaded_scores, stored_scores
from automil.tune.final.ensemble_selection import Ensemble, calibrate, calibrated, select
from automil.tune.final.leaderboard import Refit

pytestmark = pytest.mark.unit


def _noisy_scores(y, right, rng, scale=1.0):
    """Scores that rank bags correctly exactly where ``right`` is true (margin +-1 times ``scale``)."""
    sign = np.where(right, 1.0, -1.0) * np.where(y == 1, 1.0, -1.0)
    return scale * sign * (1.0 + rng.random(len(y)))


def test_greedy_selection_picks_a_complementary_pair_over_a_duplicated_model():
    rng = np.random.default_rng(0)
    y = np.tile([0, 1], 60)
    # A and its duplicate err on the first third of the bags, B on the last third (each 2/3 right);
    # averaged, A and B are right wherever the more confident of the two is, which the margins arrange.
    a_right = np.arange(120) >= 40
    b_right = np.arange(120) < 80
    a = _noisy_scores(y, a_right, rng)
    b = _noisy_scores(y, b_right, rng)
    b[~a_right] *= 3.0  # B is sure where A errs
    a[~b_right] *= 3.0  # and A where B errs
    probas = [calibrated(calibrate(s, y), s) for s in (a, a.copy(), b)]
    weights = select(probas, y, "balanced_accuracy")
    assert weights[1] == 0.0  # the duplicate adds nothing the original does not
    assert weights[0] > 0 and weights[2] > 0
    combined = sum(w * p for w, p in zip(weights, probas, strict=True))
    assert score(y, combined, "balanced_accuracy") > max(score(y, p, "balanced_accuracy") for p in probas)


def test_weights_sum_to_one_and_the_selection_is_deterministic():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 90)
    probas = [rng.dirichlet(np.ones(3), 90) for _ in range(5)]
    weights = select(probas, y, "accuracy", rounds=25)
    assert weights.sum() == pytest.approx(1.0)
    assert np.allclose(weights * 25, np.round(weights * 25))  # multiples of 1/rounds
    assert np.array_equal(weights, select(probas, y, "accuracy", rounds=25))


def test_the_selection_starts_from_the_best_single_candidate_and_keeps_it_when_nothing_helps():
    y = np.tile([0, 1], 20)
    perfect = np.eye(2)[y] * 0.9 + 0.05
    flipped = perfect[:, ::-1]
    assert np.array_equal(select([flipped, perfect], y), [0.0, 1.0])


def test_a_climb_from_a_given_start_keeps_the_start_and_adds_the_rounds_left():
    y = np.tile([0, 1], 20)
    perfect = np.eye(2)[y] * 0.9 + 0.05
    flipped = perfect[:, ::-1]
    # started on the flipped candidate (a sorted initialization gone wrong), the climb outweighs it
    candidates = [flipped, perfect]
    weights = select(candidates, y, rounds=10, start=[1, 0])
    assert np.array_equal(weights, [0.1, 0.9])
    assert np.array_equal(select(candidates, y, rounds=10, start=[0, 0]), select(candidates, y, rounds=10))


def test_a_nearly_flat_model_is_not_picked_as_a_shift_of_the_threshold():
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1], 50)
    # A good model that puts a fifth of the positives just below 1/2, and a useless one near 0.6 for every
    # bag: averaged with it, the good model's threshold moves to 0.4 and every bag of these is right.
    good = np.concatenate([rng.uniform(0.05, 0.4, 50), rng.uniform(0.41, 0.49, 10), rng.uniform(0.6, 0.95, 40)])
    flat = 0.6 + rng.uniform(-0.01, 0.01, 100)
    probas = [np.column_stack([1 - p, p]) for p in (good, flat)]
    shifted = (probas[0] + probas[1]) / 2
    assert score(y, shifted, "balanced_accuracy") > score(y, probas[0], "balanced_accuracy")
    # the log-loss sees no information in the flat model: the selection keeps the good one alone
    assert np.array_equal(select(probas, y, "balanced_accuracy"), [1.0, 0.0])


def test_calibration_makes_differently_scaled_scores_comparable():
    rng = np.random.default_rng(2)
    y = np.tile([0, 1], 100)
    margin = np.where(y == 1, 1.0, -1.0) + rng.normal(0, 0.8, len(y))
    small, large = margin, 1000.0 * margin + 5000.0  # the same ranking, scores 1000x apart and shifted
    p_small = calibrated(calibrate(small, y), small)
    p_large = calibrated(calibrate(large, y), large)
    assert p_small.shape == (200, 2) and np.allclose(p_small.sum(axis=1), 1.0)
    assert np.allclose(p_small, p_large, atol=1e-3)


def test_multiclass_scores_calibrate_to_one_column_per_class():
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1, 2], 30)
    scores = np.eye(3)[y] + rng.normal(0, 0.5, (90, 3))
    proba = calibrated(calibrate(scores, y), scores)
    assert proba.shape == (90, 3)
    assert score(y, proba, "accuracy") > 0.8


class _Margin:
    """A fitted two-class model on plain arrays: the first feature of the bag's mean, shifted."""

    classes_ = np.array(["neg", "pos"])
    n_features_in_ = 2

    def __init__(self, shift):
        self.shift = shift

    def decision_function(self, bags):
        return np.array([bag.mean(axis=0)[0] + self.shift for bag in bags])

    def predict(self, bags):
        return self.classes_[(self.decision_function(bags) > 0).astype(int)]


def test_ensemble_predicts_labels_probabilities_and_survives_pickling():
    rng = np.random.default_rng(4)
    y = np.tile(["neg", "pos"], 20)
    bags = [rng.normal(1.0 if label == "pos" else -1.0, 0.5, (3, 2)) for label in y]
    members = [_Margin(0.0), _Margin(0.2)]
    calibrators = [calibrate(bag_scores(m, bags), y) for m in members]
    model = pickle.loads(pickle.dumps(Ensemble(members, calibrators, [0.6, 0.4], ["a", "b"])))
    proba = model.predict_proba(bags)
    assert proba.shape == (40, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert list(model.classes_) == ["neg", "pos"]
    assert np.array_equal(model.predict(bags), model.classes_[np.argmax(model.decision_function(bags), axis=1)])
    assert (model.predict(bags) == y).mean() > 0.9


def test_stored_scores_round_trip_with_missing_bags_under_their_stored_names():
    repeat = ScoreKey(Refit.REPEAT, 2)
    scores = {NESTED_SCORES: np.array([0.123456789, np.nan]), repeat: np.array([[1.0, np.nan], [3.0, 4.0]])}
    stored = stored_scores(scores)
    assert set(stored) == {"nested", "repeat-2"}  # the names results stored in existing studies use
    back = loaded_scores(stored)
    assert set(back) == {NESTED_SCORES, repeat}
    assert np.allclose(back[NESTED_SCORES], [0.123457, np.nan], equal_nan=True)
    assert np.array_equal(back[repeat], scores[repeat], equal_nan=True)


def test_ensemble_instance_scores_are_its_scoring_members_calibrated_scores_with_renormalized_weights():
    import automil
    from automil.checks import witness_bags
    from automil.evaluation.standardized import Standardized

    train, test = witness_bags(10), witness_bags(5, seed=1)
    sil, misvm = (Standardized(automil.plugins.get_learner(name).build(kernel="linear")).fit(train)
                  for name in ("sil", "mi-svm"))
    bag_level = _Margin(0.0)  # no instance scores: left out
    bag_level.classes_ = sil.classes_
    members = [sil, bag_level, misvm]
    calibrators = [calibrate(bag_scores(m, train), train.y) for m in members]
    model = Ensemble(members, calibrators, [0.5, 0.3, 0.2])
    expected = sum(w / 0.7 * calibrated(c, m.instance_scores(test)[:, 1])
                   for m, c, w in ((sil, calibrators[0], 0.5), (misvm, calibrators[2], 0.2)))
    scores = model.instance_scores(test)
    assert scores.shape == (test.n_instances, 2) and np.allclose(scores.sum(axis=1), 1.0)
    np.testing.assert_allclose(scores, expected)
    # an instance scored alone is a bag of one: the same calibrated probability as that bag's
    alone = automil.Bags(test.X[:3], np.arange(4))
    np.testing.assert_allclose(model.instance_scores(alone), Ensemble(
        [sil, misvm], [calibrators[0], calibrators[2]], [0.5 / 0.7, 0.2 / 0.7]).predict_proba(alone))
    assert not hasattr(Ensemble([bag_level], [calibrators[1]], [1.0]), "instance_scores")
