"""Calibration figures measured on held-out bags (docs/probabilities.md, "How well they hold"), on generated
scores and bags: the map fitted on out-of-fold scores only, coverage in its band over many random splits,
grouped calibration bags, pooling the outer folds, rows without sets, the leaderboard's lines and --json keys
(the run's metrics, reliability diagram and ``automil report --calibration`` through a real store:
tests/test_calibration_report.py)."""

import json

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, log_loss

from automil.bags import Bags
from automil.cli.tune import print_leaderboard
from automil.evaluation.calibrated import CalibrationBags, HeldApart, calibration_map
from automil.evaluation.calibration_figures import (
    brier_score,
    expected_calibration_error,
    held_out_figures,
    pooled,
    raw_probabilities,
    reliability_bins,
    split_figures,
)
from automil.evaluation.calibration_figures import log_loss as own_log_loss
from automil.evaluation.metrics import FoldScores
from automil.records import LearnerResult, ModelRecord, Status, TrialRecord, TrialState
from automil.tune.final.leaderboard import Evaluation, Refit, procedure_row, result_row
from automil.tune.options import TuneOptions

pytestmark = pytest.mark.unit


def _generated(n, rng, shift=1.5, scale=1.0):
    """Binary labels and noisy decision scores of ``n`` bags (shifted by the label, times ``scale``)."""
    y = rng.integers(0, 2, n)
    return y, scale * (shift * (2 * y - 1) + rng.normal(scale=1.5, size=n))


def _figures(calibration_scores, calibration_y, test_scores, test_y, classes, probabilities):
    """:func:`held_out_figures` with prediction sets whose held-apart model scores as the out-of-fold scores
    do (generated scores: one scoring rule throughout)."""
    return held_out_figures(calibration_scores, calibration_y, test_scores, test_y, classes, probabilities,
                            sets=CalibrationBags(calibration_scores, calibration_y), set_scores=test_scores)


def test_the_map_is_fitted_on_the_out_of_fold_scores_alone_and_the_figures_are_scikit_learns():
    rng = np.random.default_rng(0)
    y_cal, oof = _generated(200, rng)
    y_test, test = _generated(80, rng)
    figures = _figures(oof, y_cal, test, y_test, [0, 1], probabilities=False)
    proba = calibration_map(oof, y_cal, np.array([0, 1]), probabilities=False).predict_proba(test[:, None])
    assert figures.brier == pytest.approx(brier_score_loss(y_test, proba[:, 1]))
    assert figures.log_loss == pytest.approx(log_loss(y_test, proba))
    three = np.random.default_rng(9).dirichlet(np.ones(3), size=50)  # and scikit-learn's multi-class figures
    labels = np.arange(50) % 3
    assert brier_score(three, labels) == pytest.approx(brier_score_loss(labels, three, labels=[0, 1, 2]))
    assert own_log_loss(three, labels) == pytest.approx(log_loss(labels, three, labels=[0, 1, 2]))
    assert figures.ece == pytest.approx(expected_calibration_error(reliability_bins(proba, y_test)))
    # the held-out labels only score: other labels, the same probabilities (the same map and quantile)
    flipped = _figures(oof, y_cal, test, 1 - y_test, [0, 1], probabilities=False)
    assert flipped.brier == pytest.approx(brier_score_loss(1 - y_test, proba[:, 1]))
    assert flipped.set_size == figures.set_size and flipped.abstention == figures.abstention
    assert figures.held_out_bags == 80 and figures.calibration_bags == 200
    assert figures.class_bags == np.bincount(y_test).tolist()


def test_ece_counts_each_bin_by_its_bags():
    proba = np.array([[0.05, 0.95], [0.1, 0.9], [0.35, 0.65], [0.4, 0.6]])
    bins = reliability_bins(proba, np.array([1, 0, 1, 1]))
    assert [(b.low, b.bags) for b in bins] == [(0.6, 2), (0.9, 2)]
    # bin 0.6: confidence 0.625, right 1.0; bin 0.9: confidence 0.925, right 0.5
    assert expected_calibration_error(bins) == pytest.approx(0.5 * 0.375 + 0.5 * 0.425)


def test_calibrating_overconfident_scores_lowers_their_calibration_error_and_brier_score():
    rng = np.random.default_rng(1)
    y_cal, oof = _generated(300, rng, scale=4.0)  # decision scores far too large for the logistic function
    y_test, test = _generated(300, rng, scale=4.0)
    figures = _figures(oof, y_cal, test, y_test, [0, 1], probabilities=False)
    assert figures.ece < figures.raw_ece / 2 and figures.brier < figures.raw_brier
    assert figures.log_loss < figures.raw_log_loss
    np.testing.assert_allclose(raw_probabilities(test, False)[:, 1], 1 / (1 + np.exp(-test)))


def test_decision_scores_that_are_probabilities_already_are_taken_as_they_are_for_the_raw_figures():
    rng = np.random.default_rng(10)
    y_cal, oof = _generated(200, rng)
    y_test, test = _generated(100, rng)
    p_cal, p_test = 1 / (1 + np.exp(-oof)), 1 / (1 + np.exp(-test))  # a forest's probability as its "decision"
    figures = _figures(p_cal, y_cal, p_test, y_test, [0, 1], probabilities=False)
    assert figures.raw_brier == pytest.approx(brier_score_loss(y_test, p_test))
    margins = _figures(oof, y_cal, test, y_test, [0, 1], probabilities=False)  # margins beyond [0, 1]
    assert margins.raw_brier == pytest.approx(figures.raw_brier)


def test_coverage_over_200_random_splits_averages_inside_the_band_the_guarantee_allows():
    rng = np.random.default_rng(2)
    y, scores = _generated(200 * 200, rng)
    splits = [_figures(scores[k * 200:k * 200 + 100], y[k * 200:k * 200 + 100],
                               scores[k * 200 + 100:(k + 1) * 200], y[k * 200 + 100:(k + 1) * 200], [0, 1],
                               probabilities=False) for k in range(200)]
    every = pooled(splits)
    assert every.held_out_bags == 20_000 and every.calibration_bags == 100
    for level in (0.8, 0.9, 0.95):
        low, high = every.band(level)
        assert high == pytest.approx(level + 1 / 101)
        error = 3 * every.standard_error(level)  # the 20,000 held-out bags' binomial error, three times
        assert every.coverage[f"{level:g}"] >= low - error
        assert every.worst_class(level) >= level - 0.05
        if level > 0.8:
            assert every.coverage[f"{level:g}"] <= high + error
    # At 0.8 the quantile would leave some sets empty, and a set is never empty: it holds the most probable
    # class, right for 84% of bags here, so the coverage is that share, above the band.
    assert every.set_size["0.8"] < 1.01 and every.coverage["0.8"] > every.band(0.8)[1]
    # sets grow with the coverage asked, and so do the abstentions
    assert every.set_size["0.8"] < every.set_size["0.9"] < every.set_size["0.95"]
    assert every.abstention["0.8"] < every.abstention["0.9"] < every.abstention["0.95"]


def test_a_split_calibrated_on_grouped_bags_counts_patients_and_leaves_out_bags_without_a_score():
    rng = np.random.default_rng(3)
    y, scores = _generated(60, rng)
    groups = np.repeat([f"p{i}" for i in range(20)], 3)  # 20 patients of three bags, one label each
    y = np.repeat(y[::3], 3)
    bags = Bags.from_list([np.zeros((2, 1))] * 60, y, groups=groups)
    order, test = np.arange(30), np.arange(30, 60)
    oof = scores[order].copy()
    oof[0] = np.nan  # a fit the budget cut short: left out of the map
    held_apart = HeldApart(np.arange(12), np.where(np.arange(60) < 12, scores, np.nan))
    held_apart.scores[test] = scores[test]
    figures = split_figures(bags, order, test, oof, scores[test], probabilities=False, held_apart=held_apart)
    assert figures.calibration_bags == pytest.approx(4.0), "the four patients of the twelve bags held apart"
    assert figures.held_out_bags == 30 and figures.coverage
    # without a held-apart fit: the probabilities' figures, no sets
    bare = split_figures(bags, order, test, oof, scores[test], probabilities=False)
    assert bare.ece == figures.ece and not bare.coverage and bare.calibration_bags is None
    # the calibration bags of one class only: no map, no figures
    one_class = np.flatnonzero(y[:30] == y[0])
    assert split_figures(bags, one_class, test, scores[one_class], scores[test], probabilities=False) is None
    with pytest.raises(ValueError, match="no calibration bag of class"):
        held_out_figures(scores[one_class], y[one_class], scores[test], y[test], [0, 1], probabilities=False)


def test_pooling_outer_folds_scores_every_held_out_bag_once():
    rng = np.random.default_rng(4)
    y_cal, oof = _generated(150, rng)
    y_test, test = _generated(90, rng)
    parts = [_figures(oof, y_cal, test[s], y_test[s], [0, 1], False) for s in (slice(0, 40), slice(40, 90))]
    whole, every = pooled(parts), _figures(oof, y_cal, test, y_test, [0, 1], False)
    for name in ("ece", "brier", "log_loss", "raw_ece", "raw_brier", "raw_log_loss"):
        assert getattr(whole, name) == pytest.approx(getattr(every, name)), name
    for name in ("coverage", "set_size", "abstention"):
        assert getattr(whole, name) == pytest.approx(getattr(every, name)), name
    assert whole.class_coverage["0.9"] == pytest.approx(every.class_coverage["0.9"])
    assert pooled([None, None]) is None
    # a split without sets: the probabilities pooled, no coverage from part of the bags
    bare = held_out_figures(oof, y_cal, test[:40], y_test[:40], [0, 1], False)
    part = pooled([bare, parts[1]])
    assert part.ece == pytest.approx(whole.ece) and not part.coverage and part.calibration_bags is None


OPTIONS = TuneOptions(folds=2, repeats=1, protocol="nested", metric="balanced_accuracy", jobs=1)


def _row(learner, inner, calibrations):
    """A learner's nested row over two outer splits with the ``calibrations`` measured on each."""
    best = TrialRecord(0, TrialState.COMPLETE, 0.5, attrs={"estimator_params": {}})
    truth = np.array([0, 1, 0, 1])
    return result_row("gen", OPTIONS, Evaluation(learner, "p", f"gen/{learner}", [best], best, outer_best=[best] * 2,
                                                 nested=[FoldScores(accuracy=0.9, balanced_accuracy=0.9)] * 2,
                                                 inner=inner, fit_seconds=[1.0],
                                                 calibration=calibrations,
                                                 predictions={Refit.NESTED: [(truth, truth)] * 2}))


def _splits(seed, n_test=(30, 50)):
    rng = np.random.default_rng(seed)
    y_cal, oof = _generated(100, rng)
    out = []
    for n in n_test:
        y, test = _generated(n, rng)
        out.append(_figures(oof, y_cal, test, y, [0, 1], False))
    return out


def test_a_row_pools_its_outer_splits_and_the_procedure_pools_the_splits_it_chose():
    a, b = _splits(5), _splits(6)
    rows = [_row("a", [0.9, 0.6], a), _row("b", [0.7, 0.8], b)]
    assert rows[0].calibration == pooled(a) and rows[0].nested.outer_splits[1].calibration == a[1]
    procedure = procedure_row(rows, [np.array([100, 100])] * 2)
    assert procedure.choices == ["a", "b"]
    assert procedure.calibration == pooled([a[0], b[1]])
    # the row round-trips through JSON (a study's stored result) with its figures and its splits'
    again = LearnerResult.from_dict(json.loads(json.dumps(rows[0].to_dict())))
    assert again.calibration == rows[0].calibration and again.nested.outer_splits[0].calibration == a[0]


def test_the_leaderboard_states_the_chosen_models_calibration_and_abstention_and_the_json_rows_hold_them(
        tmp_path, capsys):
    row = _row("a", [0.9, 0.6], _splits(7))
    row.status, row.model = Status.OK, ModelRecord(selected=True)
    figures = row.calibration
    target = tmp_path / "rows.json"
    print_leaderboard([row], str(target))
    out = capsys.readouterr().out
    abstain = 100 * figures.abstention["0.9"]
    assert f"abstains on {abstain:.1f}% of bags at 0.9" in out
    assert f"ECE {figures.ece:.3f} ({figures.raw_ece:.3f})" in out and f"{figures.held_out_bags} held-out bags" in out
    assert f"0.9-{0.9 + 1 / 101:.3f}" in out, "the band the guarantee allows at 0.9 (100 calibration bags)"
    (written,) = json.loads(target.read_text())
    assert written["abstention"]["0.9"] == pytest.approx(figures.abstention["0.9"])
    assert written["coverage_se"]["0.9"] == pytest.approx(np.sqrt(0.09 / 80))
    assert written["ece"] == pytest.approx(figures.ece) and written["raw_ece"] == pytest.approx(figures.raw_ece)


def test_a_row_without_sets_states_its_probabilities_alone_and_round_trips_without_coverage_keys(tmp_path, capsys):
    rng = np.random.default_rng(12)
    y_cal, oof = _generated(100, rng)
    splits = [held_out_figures(oof, y_cal, *reversed(_generated(n, rng)), [0, 1], False) for n in (30, 50)]
    row = _row("a", [0.9, 0.6], splits)
    row.status, row.model = Status.OK, ModelRecord(selected=True)
    written = row.to_dict()
    assert "ece" in written and not {"coverage", "coverage_se", "calibration_bags", "abstention"} & set(written)
    assert LearnerResult.from_dict(json.loads(json.dumps(written))).calibration == row.calibration
    print_leaderboard([row], None)
    out = capsys.readouterr().out
    assert f"ECE {row.calibration.ece:.3f}" in out and "prediction sets at" not in out
