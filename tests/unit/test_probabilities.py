"""Calibrated bag probabilities and conformal prediction sets (docs/probabilities.md), on generated scores
and bags: where the calibration comes from, the held-apart model the sets come from and its calibration bags,
the coverage over many random splits, grouped calibration, and what ``automil predict --coverage`` prints and
writes."""

import json
from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from automil.bags import Bags
from automil.cli.main import main
from automil.evaluation.calibrated import (
    Calibrated,
    CalibrationBags,
    HeldApart,
    calibrate_model,
    calibration_map,
    conformity,
)
from automil.evaluation.conformal import conformal_scores, group_weights, prediction_sets, set_labels, threshold
from automil.evaluation.folds import bag_folds, fold_splits, held_apart_split
from automil.evaluation.prediction import predict_bags
from automil.records import TrialAttr, TrialRecord, TrialState
from automil.tune.final.calibration import calibrated_model
from automil.tune.final.ensemble_row import Candidate
from automil.tune.studies.trial_folds import TrialFolds

pytestmark = pytest.mark.unit


class MeanScore(ClassifierMixin, BaseEstimator):
    """A fixed bag classifier: a bag's decision score is the mean of its instances' first feature. It
    counts its fits: calibration must make none."""

    fits = 0

    def fit(self, bags, y=None):
        MeanScore.fits += 1
        return self

    classes_ = np.array([0, 1])
    n_features_in_ = 2

    def decision_function(self, bags):
        return np.array([np.mean(np.asarray(b)[:, 0]) for b in bags])

    def predict(self, bags):
        return self.classes_[(self.decision_function(bags) > 0).astype(int)]


class ShiftedScore(MeanScore):
    """:class:`MeanScore` moved by ``shift``: a held-apart fit whose scores differ from the full-data model's."""

    def __init__(self, shift=0.0):
        self.shift = shift

    def decision_function(self, bags):
        return super().decision_function(bags) + self.shift


class GrowingScore(ClassifierMixin, BaseEstimator):
    """A bag classifier on a steep learning curve: its decision score is the mean of a bag's first feature
    times a scale that grows with the bags it was fitted on, as a learner's confidence grows with its
    training slides."""

    def fit(self, bags, y=None):
        self.classes_ = np.array([0, 1])
        self.scale_ = bags.n_bags / 20
        return self

    def decision_function(self, bags):
        return self.scale_ * np.array([np.mean(np.asarray(b)[:, 0]) for b in bags])

    def predict(self, bags):
        return self.classes_[(self.decision_function(bags) > 0).astype(int)]


def _generated(n, rng, shift=1.5):
    """Binary labels and noisy decision scores of ``n`` bags (scores shifted by the label)."""
    y = rng.integers(0, 2, n)
    return y, shift * (2 * y - 1) + rng.normal(scale=1.5, size=n)


def _bags(scores, y, groups=None):
    """Bags of three instances whose first feature averages to ``scores``."""
    instances = [np.column_stack([np.full(3, s), np.arange(3.0)]) for s in scores]
    return Bags.from_list(instances, y, groups=groups)


def test_the_calibration_map_is_the_one_fitted_on_the_out_of_fold_scores_and_no_model_is_refitted():
    rng = np.random.default_rng(0)
    y_cal, oof = _generated(300, rng)
    y_new, new = _generated(50, rng)
    MeanScore.fits = 0
    model = calibrate_model(MeanScore(), oof, y_cal)
    expected = calibration_map(oof, y_cal, np.array([0, 1]), probabilities=False).predict_proba(new[:, None])
    np.testing.assert_allclose(model.predict_proba(_bags(new, y_new)), expected)
    assert MeanScore.fits == 0
    # the model's labels are kept (the headline's), the probabilities are calibrated ones
    np.testing.assert_array_equal(model.predict(_bags(new, y_new)), MeanScore().predict(_bags(new, y_new)))
    np.testing.assert_allclose(model.predict_proba(_bags(new, y_new)).sum(axis=1), 1.0)


def test_the_logged_model_is_calibrated_on_its_best_trials_out_of_fold_scores_and_its_sets_on_its_held_apart_fit():
    rng = np.random.default_rng(1)
    y, scores = _generated(60, rng)
    tuning = np.arange(60) % 3  # three tuning folds; the best trial's scores are in their order
    order = np.concatenate([np.flatnonzero(tuning == f) for f in range(3)])
    oof = scores[order]
    best = TrialRecord(1, TrialState.COMPLETE, 0.9, {}, {TrialAttr.OOF_SCORES: oof.tolist()})
    worse = TrialRecord(0, TrialState.COMPLETE, 0.5, {}, {TrialAttr.OOF_SCORES: (-oof).tolist()})
    plan = SimpleNamespace(folds=SimpleNamespace(tuning=tuning),
                           trial_folds=partial(TrialFolds.cross_validation, tuning),
                           options=SimpleNamespace(held_out=None, directions=("maximize",)))
    bags = _bags(scores, y)
    calibration = np.flatnonzero(tuning == 0)
    apart = np.where(tuning == 0, 0.5 * scores, np.nan)  # the held-apart model scores its calibration bags
    held = HeldApart(calibration, apart, MeanScore())
    model = calibrated_model(plan, bags, Candidate([worse, best], [], held_apart={None: held}), MeanScore())
    assert isinstance(model, Calibrated) and model.held_apart is held.model
    direct = calibrate_model(MeanScore(), oof, y[order])
    np.testing.assert_allclose(model.predict_proba(bags), direct.predict_proba(bags))
    # the conformity scores: the held-apart model's scores of its calibration bags, through the same map
    expected = conformity(direct.calibrator, CalibrationBags(0.5 * scores[calibration], y[calibration]), [0, 1], False)
    np.testing.assert_allclose(model.conformal.scores, expected.scores)
    assert len(model.conformal.scores) == len(calibration) == 20
    # without a held-apart fit the model is calibrated and gives no sets, in one line that says why
    plain = calibrated_model(plan, bags, Candidate([worse, best], []), MeanScore())
    np.testing.assert_allclose(plain.predict_proba(bags), direct.predict_proba(bags))
    with pytest.raises(ValueError, match="gives no prediction sets: no fit of it without its calibration bags"):
        plain.predict_set(bags)
    # a best trial without out-of-fold scores leaves the model uncalibrated
    bare = TrialRecord(2, TrialState.COMPLETE, 0.95, {}, {})
    assert isinstance(calibrated_model(plan, bags, Candidate([bare], []), MeanScore()), MeanScore)


def test_with_sets_the_held_apart_model_alone_gives_every_bags_label_probabilities_and_set():
    rng = np.random.default_rng(8)
    y_cal, oof = _generated(200, rng)
    y, scores = _generated(300, rng)
    bags, apart = _bags(scores, y), ShiftedScore(1.0)
    calibration = CalibrationBags(apart.decision_function(_bags(oof, y_cal)), y_cal)
    model = calibrate_model(MeanScore(), oof, y_cal, apart, calibration)
    rows = np.arange(bags.n_bags)
    for mondrian in (False, True):
        answer = model.predict_conformal(bags, 0.9, mondrian)
        # one model: the held-apart one's scores through the calibration map, and the sets of those
        np.testing.assert_allclose(answer.proba, model.calibrator.predict_proba(apart.decision_function(bags)[:, None]))
        np.testing.assert_array_equal(answer.sets, prediction_sets(answer.proba, model.conformal, 0.9, mondrian))
        np.testing.assert_array_equal(model.predict_set(bags, 0.9, mondrian), answer.sets)
        # every label is in its set, is the class of a set of one, and no class of its set is more probable
        index = np.searchsorted(model.classes_, answer.labels)
        assert answer.sets[rows, index].all()
        decided = answer.sets.sum(axis=1) == 1
        assert decided.any() and (~decided).any()
        np.testing.assert_array_equal(np.argmax(answer.sets[decided], axis=1), index[decided])
        np.testing.assert_array_equal(answer.proba[rows, index], np.where(answer.sets, answer.proba, -1).max(axis=1))
    marginal = model.predict_conformal(bags, 0.8)  # at 0.8 every bag is decided
    np.testing.assert_array_equal(marginal.labels, model.classes_[np.argmax(marginal.proba, axis=1)])
    # the full-data model's labels and probabilities, printed beside these sets, would contradict some
    full = np.searchsorted(model.classes_, model.predict(bags))
    decided = marginal.sets.sum(axis=1) == 1
    assert (~marginal.sets[rows, full] & decided).any()
    assert (np.argmax(model.predict_proba(bags), axis=1) != np.argmax(marginal.proba, axis=1)).any()


def test_a_class_conditional_set_of_one_class_decides_the_label_over_the_most_probable_class():
    # class 0's calibration bags have 0.3 for it (scores 0.7), class 1's 0.7 (scores 0.3): one threshold each
    calibration = conformal_scores(np.array([[0.3, 0.7]] * 40), np.repeat([0, 1], 20))
    proba = np.array([[0.4, 0.6], [0.2, 0.8], [0.9, 0.1]])
    sets = prediction_sets(proba, calibration, 0.9, mondrian=True)
    assert sets.tolist() == [[True, False], [False, True], [True, False]]
    assert set_labels(proba, sets).tolist() == [0, 1, 0]  # the first set is {0} though 1 is more probable
    marginal = prediction_sets(proba, calibration, 0.9)
    np.testing.assert_array_equal(set_labels(proba, marginal), np.argmax(proba, axis=1))


def test_a_held_apart_fit_trains_on_neither_its_calibration_fold_nor_its_outer_fold_and_keeps_patients_whole():
    rng = np.random.default_rng(6)
    groups = np.repeat(np.arange(40), rng.integers(1, 5, 40))  # 40 patients of one to four slides
    y = (groups % 2).astype(int)
    assignment = bag_folds(y, 5, seed=3, groups=groups)
    for outer in (None, 0, 3):
        train, calibration, test = held_apart_split(assignment, outer)
        folds = set(assignment[calibration].tolist())
        assert len(folds) == 1 and folds != {outer}, "one tuning fold, not the outer one"
        assert np.array_equal(np.sort(np.concatenate([train, calibration, test])), np.arange(len(y)))
        assert not set(train) & set(calibration) and not set(train) & set(test)
        assert set(test) == set(np.flatnonzero(assignment == outer))
        # whole patients: none of the calibration bags' patients has a bag the model trained on
        assert not set(groups[calibration]) & set(groups[train])


def test_sets_from_a_held_apart_model_cover_in_their_band_where_those_from_out_of_fold_scores_fall_short():
    rng = np.random.default_rng(2024)
    coverage, splits = 0.9, 200
    held_apart, out_of_fold = [], []
    for seed in range(splits):
        bags = _bags(*reversed(_generated(150, rng, shift=0.7)))
        new = _bags(*reversed(_generated(100, rng, shift=0.7)))
        assignment = bag_folds(bags.y, 5, seed)
        oof = np.empty(bags.n_bags)
        for train, test in fold_splits(assignment):  # the tuning folds' models, on 4/5 of the bags
            oof[test] = GrowingScore().fit(bags.subset(train)).decision_function(bags.subset(test))
        train, calibration, _ = held_apart_split(assignment)
        apart = GrowingScore().fit(bags.subset(train))
        sets_of = CalibrationBags(apart.decision_function(bags.subset(calibration)), bags.y[calibration])
        model = calibrate_model(GrowingScore().fit(bags), oof, bags.y, apart, sets_of)
        held_apart.append(model.predict_set(new, coverage)[np.arange(new.n_bags), new.y].mean())
        # the conformity scores of every bag's out-of-fold score, applied to the model fitted on all of them
        old = conformity(model.calibrator, CalibrationBags(oof, bags.y), [0, 1], False)
        sets = prediction_sets(model.predict_proba(new), old, coverage)
        out_of_fold.append(sets[np.arange(new.n_bags), new.y].mean())
    n_cal = len(calibration)
    # the spread of one split's coverage: its calibration draw's (a beta of variance about c(1-c)/(n_cal+2))
    # and its test bags' (binomial); the tolerance is three standard errors of the mean over the splits
    tolerance = 3 * np.sqrt(coverage * (1 - coverage) * (1 / (n_cal + 2) + 1 / 100) / splits)
    assert coverage - tolerance <= np.mean(held_apart) <= coverage + 1 / (n_cal + 1) + tolerance
    assert np.mean(out_of_fold) < coverage - tolerance, "the model fitted on more bags is sharper than its folds'"


def test_coverage_over_200_random_calibration_test_splits_stays_in_its_band():
    rng = np.random.default_rng(2024)
    coverage, n_cal, n_test, splits = 0.9, 200, 100, 200
    y, scores = _generated(n_cal + n_test, rng, shift=0.7)
    proba = calibration_map(scores, y, np.array([0, 1]), probabilities=False).predict_proba(scores[:, None])
    covered = []
    for _ in range(splits):
        order = rng.permutation(len(y))
        cal, test = order[:n_cal], order[n_cal:]
        calibration = conformal_scores(proba[cal], y[cal])
        sets = prediction_sets(proba[test], calibration, coverage)
        covered.append(sets[np.arange(n_test), y[test]].mean())
    # the mean over splits of the empirical coverage; its sampling error, binomial over the test bags, is
    # at most that of n_test * splits independent draws times the correlation the splits share (bounded by 1)
    se = np.sqrt(coverage * (1 - coverage) / n_test)
    tolerance = 3 * se / np.sqrt(splits) + 3 * np.sqrt(coverage * (1 - coverage) / len(y))
    mean = float(np.mean(covered))
    assert coverage - tolerance <= mean <= coverage + 1 / (n_cal + 1) + tolerance


def test_class_conditional_sets_cover_each_class_where_marginal_ones_may_not():
    rng = np.random.default_rng(7)
    n = 4000
    y = (rng.random(n) < 0.2).astype(int)  # a rare positive class, poorly separated
    scores = 0.8 * (2 * y - 1) + rng.normal(size=n)
    proba = calibration_map(scores, y, np.array([0, 1]), probabilities=False).predict_proba(scores[:, None])
    cal, test = np.arange(n // 2), np.arange(n // 2, n)
    calibration = conformal_scores(proba[cal], y[cal])
    for k in (0, 1):
        inside = prediction_sets(proba[test], calibration, 0.9, mondrian=True)[test - n // 2, y[test]]
        assert inside[y[test] == k].mean() >= 0.9 - 3 * np.sqrt(0.09 / (y[test] == k).sum())


def test_a_patient_with_many_bags_counts_once_in_the_calibration_quantile():
    # ten patients of one bag with scores 0.0 .. 0.9, and one patient with 100 bags of score 1.0
    scores = np.concatenate([np.arange(10) / 10, np.ones(100)])
    groups = [f"p{i}" for i in range(10)] + ["many"] * 100
    weights = group_weights(groups, len(scores))
    assert weights.sum() == pytest.approx(11)
    # by patients: the 0.5 quantile of 11 patients at (12 * 0.5) / 11 is the 6th smallest patient score
    assert threshold(scores, weights, 0.5) == pytest.approx(0.5)
    # by bags, the many-bag patient would carry it
    assert threshold(scores, np.ones(len(scores)), 0.5) == 1.0
    # too few patients for the coverage: every class in the set
    assert threshold(scores[:3], np.ones(3), 0.9) == np.inf


def test_a_set_is_never_empty_and_a_bad_coverage_is_refused():
    calibration = conformal_scores(np.array([[0.99, 0.01]] * 50), np.zeros(50, dtype=int))
    sets = prediction_sets(np.array([[0.6, 0.4], [0.3, 0.7]]), calibration, 0.5)
    assert sets.sum(axis=1).tolist() == [1, 1] and sets[1, 1]
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            prediction_sets(np.array([[0.5, 0.5]]), calibration, bad)


@pytest.fixture
def predict_cli(tmp_path, monkeypatch):
    """``automil predict`` on a bag file, with ``load_estimator`` giving the model the test sets."""
    rng = np.random.default_rng(3)
    y_cal, oof = _generated(200, rng)
    y, scores = _generated(40, rng)
    scores[:5] = 0.0  # bags on the threshold: the sets hold both classes
    path = tmp_path / "bags.npz"
    bags = _bags(scores, y)
    np.savez(path, X=bags.X, offsets=np.arange(0, 121, 3), y=y)
    holder = {"model": calibrate_model(MeanScore(), oof, y_cal, MeanScore(), CalibrationBags(oof, y_cal))}
    monkeypatch.setattr("automil.track.writing.model.load_estimator", lambda uri, model: holder["model"])

    def run(*args):
        return main(["predict", "runs:/x/model", "--dataset", str(path), "--tracking-uri", "sqlite:///unused.db",
                     *args])
    run.holder = holder
    return run


def test_predict_prints_abstentions_and_a_summary_and_writes_them_in_the_json_rows(predict_cli, tmp_path, capsys):
    target = tmp_path / "out.json"
    assert predict_cli("--coverage", "0.9", "--json", str(target)) == 0
    out = capsys.readouterr().out
    rows = json.loads(target.read_text())
    abstained = [r for r in rows if r["abstain"]]
    assert abstained and all(r["prediction_set"] == ["0", "1"] for r in abstained)
    assert all(len(r["prediction_set"]) == 1 for r in rows if not r["abstain"])
    assert sum("abstain {0,1}" in line for line in out.splitlines()) == len(abstained)
    decided = [r for r in rows if not r["abstain"]]
    assert all(r["prediction_set"] == [str(r["label"])] for r in decided)
    assert out.splitlines()[0] == ("model: held-apart model (conformal sets, coverage 0.9): the logged configuration "
                                   "fitted without its 200 calibration bags; labels, probabilities, sets and "
                                   "witnesses all its")
    assert "40 bags (held-apart model): ACC" in out
    wrong = sum(r["prediction_set"] != [str(r["truth"])] for r in decided)
    assert (f"{len(decided)} bags decided, {len(abstained)} abstained; error among decided bags "
            f"{100 * wrong / len(decided):.1f}% ({wrong} of {len(decided)})") in out


def test_predict_refuses_a_bad_coverage_and_a_model_without_sets_in_one_line(predict_cli, capsys):
    rng = np.random.default_rng(4)
    for bad in ("1.5", "0", "-0.1"):
        assert predict_cli("--coverage", bad) == 1
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "--coverage must be between 0 and 1" in err
    predict_cli.holder["model"] = MeanScore()  # a model logged before calibration existed
    assert predict_cli("--coverage", "0.9") == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "has no calibration" in err
    assert predict_cli() == 0  # without --coverage it still predicts
    assert capsys.readouterr().out.startswith("model: full-data model (the logged fit; its labels, its own scores)")
    calibrated = predict_cli.holder["model"] = calibrate_model(MeanScore(), *reversed(_generated(100, rng)))
    assert calibrated.held_apart is None  # its held-apart fit failed or was cut
    assert predict_cli("--coverage", "0.9") == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "gives no prediction sets" in err
    assert predict_cli() == 0
    assert capsys.readouterr().out.startswith("model: full-data model (the logged fit; its labels, calibrated "
                                              "probabilities)")


def test_predict_bags_without_coverage_has_no_sets():
    rng = np.random.default_rng(5)
    y, scores = _generated(10, rng)
    model = calibrate_model(MeanScore(), *reversed(_generated(100, rng)))
    (first, *_) = predict_bags(model, _bags(scores, y))
    assert first.prediction_set is None and first.abstain is None


def test_multiclass_scores_get_one_temperature_that_keeps_every_bags_ranking_of_the_classes():
    rng = np.random.default_rng(11)
    y = rng.integers(0, 3, 300)
    scores = 2.0 * np.eye(3)[y] + rng.normal(size=(300, 3))
    calibrator = calibration_map(scores, y, np.arange(3), probabilities=False)
    proba = calibrator.predict_proba(scores)
    np.testing.assert_array_equal(np.argsort(proba, axis=1), np.argsort(scores, axis=1))
    calibration = conformal_scores(proba, y)
    sets = prediction_sets(proba, calibration, 0.9, mondrian=True)
    assert sets.shape == (300, 3) and sets.any(axis=1).all()
