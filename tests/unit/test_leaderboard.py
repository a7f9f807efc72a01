"""Leaderboard rows from evaluations built by hand: figures, statuses, the reasons given, the ranking."""

from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import rankdata

from automil.evaluation.chance import gain_stderr, score_stderr
from automil.evaluation.metrics import FoldScores, score
from automil.records import Headline, LearnerResult, Member, Status, TrialRecord, TrialState, Tuning
from automil.tune.final.chance_rule import bag_bound, row_chance
from automil.tune.final.choice import Choice, choose
from automil.tune.final.leaderboard import Evaluation, Refit, procedure_row, rank, result_row
from automil.tune.options import TuneOptions

OPTIONS = TuneOptions(folds=3, repeats=2, protocol="nested", metric="balanced_accuracy", jobs=1)


def _complete(number, value, params):
    return TrialRecord(number, TrialState.COMPLETE, value,
                       attrs={"estimator_params": params, "fit_seconds": [1.0, 3.0]})


def _scores(acc, bacc, one_class=False):
    return FoldScores(accuracy=acc, balanced_accuracy=bacc, one_class=one_class)


def test_a_nested_row_reports_the_outer_splits_and_the_repeats_of_its_best_parameters():
    trials = [_complete(0, 0.7, {"C": 1.0}), _complete(1, 0.8, {"C": 10.0}), TrialRecord(2, TrialState.PRUNED)]
    job = Evaluation("sil", "svm", "fox/sil", trials, trials[1], outer_best=[trials[0]] * 3,
                     nested=[_scores(0.6, 0.5), _scores(0.8, 0.7), _scores(0.7, 0.6)],
                     repeated={0: [_scores(0.7, 0.7)] * 3, 1: [_scores(0.9, 0.9)] * 3, 2: [_scores(1, 1)] * 2},
                     fit_seconds=[2.0, 4.0], predictions={Refit.NESTED: [(np.array([0, 1]), np.array([0, 0])),
                                                                         (np.array([1, 1]), np.array([1, 0]))]})
    row = result_row("fox", OPTIONS, job)
    assert row.status == Status.OK and row.headline.kind == "nested"
    assert row.headline.balanced_accuracy == pytest.approx(0.6)
    assert row.headline.balanced_accuracy_std == pytest.approx(0.1)
    assert row.headline.accuracy == row.nested.accuracy == pytest.approx(0.7)
    assert row.repeated.repeats == 2  # the third repeat lacks a fold: left out
    assert row.repeated.balanced_accuracy == pytest.approx(0.8)
    assert (row.tuning.best_trial, row.tuning.best_params, row.tuning.score) == (1, {"C": 10.0}, 0.8)
    assert (row.counts.trials, row.counts.complete, row.counts.pruned) == (3, 2, 1)
    assert row.costs.fit_seconds == pytest.approx(3.0)
    assert row.headline.classes == [0, 1] and row.headline.confusion_matrix == [[1, 0], [2, 1]]
    assert row.error is None


def test_an_outer_split_without_a_completed_trial_makes_the_row_partial_and_says_why():
    trials = [_complete(0, 0.7, {})]
    job = Evaluation("sil", "svm", "fox/sil", trials, trials[0], outer_best=[trials[0], None, trials[0]],
                     nested=[_scores(0.7, 0.7), None, _scores(0.7, 0.7)], repeated={0: [_scores(0.7, 0.7)] * 3})
    row = result_row("fox", OPTIONS, job)
    assert row.status == Status.PARTIAL and row.headline.balanced_accuracy is None
    assert row.repeated.balanced_accuracy == pytest.approx(0.7)
    assert row.error.startswith("no completed trial in outer split(s) 1")


def test_learners_without_a_figure_say_why():
    timed_out = [TrialRecord(i, TrialState.FAIL, attrs={"timed_out": True, "error": "T/O"}) for i in range(2)]
    failed = [TrialRecord(0, TrialState.FAIL, attrs={"error": "ValueError: bad C"})]
    pruned = [TrialRecord(0, TrialState.PRUNED, attrs={"error": "pruned: C too small"})]
    one_class = [TrialRecord(0, TrialState.PRUNED, attrs={"one_class": True, "error": "predicted one class"})]
    stopped = [TrialRecord(0, TrialState.FAIL, attrs={"interrupted": True, "error": "stopped"})]
    rows = {name: result_row("fox", OPTIONS, Evaluation("x", "p", "fox/x", trials, None))
            for name, trials in (("timed_out", timed_out), ("failed", failed), ("pruned", pruned),
                                 ("one_class", one_class), ("stopped", stopped), ("none", []))}
    assert rows["timed_out"].status == Status.TIMED_OUT and rows["timed_out"].counts.timed_out == 2
    assert rows["failed"].status == Status.FAILED and rows["failed"].error == "ValueError: bad C"
    assert rows["pruned"].status == Status.NO_RESULT
    assert rows["pruned"].error == ("no trial completed: 1 of 1 pruned (pruned: C too small), 0 timed out, "
                                    "0 stopped by the --timeout budget")
    assert rows["one_class"].error.startswith("1 of 1 trials predicted one class for every bag")
    assert rows["stopped"].status == Status.NO_TRIALS and rows["stopped"].counts.stopped == 1
    assert "1 stopped by it" in rows["stopped"].error
    assert rows["none"].error == "no trial ran: raise --timeout"


def test_the_tuned_protocol_heads_the_row_with_the_repeated_figure():
    trials = [_complete(0, 0.7, {})]
    options = TuneOptions(folds=3, protocol="tuned", jobs=1)
    job = Evaluation("sil", "svm", "fox/sil", trials, trials[0], repeated={0: [_scores(0.5, 0.6)] * 3})
    row = result_row("fox", options, job)
    assert row.headline.kind == "tuned (optimistic)" and row.headline.balanced_accuracy == pytest.approx(0.6)
    assert row.nested.balanced_accuracy is None


def test_rank_puts_the_best_headline_figure_first_and_rows_without_one_last_by_name():
    rows = [LearnerResult(learner="b", metric="accuracy"), LearnerResult(learner="a", metric="accuracy"),
            LearnerResult(learner="c", metric="accuracy", headline=Headline(accuracy=0.7, balanced_accuracy=0.1)),
            LearnerResult(learner="d", metric="accuracy", headline=Headline(accuracy=0.9))]
    assert [r.learner for r in sorted(rows, key=rank)] == ["d", "c", "a", "b"]


def test_choose_names_the_best_ok_row_and_finds_it_among_the_final_rows():
    rows = [LearnerResult(learner="a", metric="accuracy", headline=Headline(accuracy=0.9), status=Status.PARTIAL,
                          tuning=Tuning(score=0.9)),
            LearnerResult(learner="b", metric="accuracy", headline=Headline(accuracy=0.7, one_class=False),
                          status=Status.OK, tuning=Tuning(score=0.7)),
            LearnerResult(learner="c", metric="accuracy", headline=Headline(accuracy=0.8, one_class=True),
                          status=Status.OK, tuning=Tuning(score=0.8))]
    choice = choose(rows, [100, 100])
    assert choice == Choice("b") and choice.row(rows) is rows[1]
    assert choose(rows[::2], [100, 100]) == Choice(None, "no learner has a figure to choose a model by")
    assert Choice(None).row(rows) is None


def test_a_figure_over_one_repeat_has_no_sd_in_the_row_the_json_or_the_table(tmp_path, capsys):
    """One repeat is not ``+- 0.0``: its sd is not measured, so the row and ``--json`` carry ``null`` and the
    table ``-``; the row says how many repeats its repeated-CV figure rests on."""
    import json

    from automil.cli.tune import print_leaderboard

    trials = [_complete(0, 0.7, {})]
    one = result_row("fox", TuneOptions(folds=3, protocol="tuned", repeats=2, jobs=1),
                     Evaluation("sil", "svm", "fox/sil", trials, trials[0], repeated={0: [_scores(0.5, 0.6)] * 3}))
    two = result_row("fox", TuneOptions(folds=3, protocol="tuned", repeats=2, jobs=1),
                     Evaluation("nsk", "svm", "fox/nsk", trials, trials[0],
                                repeated={0: [_scores(0.5, 0.6)] * 3, 1: [_scores(0.7, 0.8)] * 3}))
    assert one.repeated.repeats == 1 and one.repeated.balanced_accuracy == pytest.approx(0.6)
    assert one.repeated.balanced_accuracy_std is None and one.headline.balanced_accuracy_std is None
    assert two.repeated.repeats == 2
    assert two.repeated.balanced_accuracy_std == pytest.approx(np.std([0.6, 0.8], ddof=1))
    path = tmp_path / "rows.json"
    print_leaderboard([two, one], str(path))
    stored = {row["learner"]: row for row in json.loads(path.read_text())}
    assert stored["sil"]["repeated_balanced_accuracy_std"] is None and stored["sil"]["repeats"] == 1
    assert stored["nsk"]["repeated_balanced_accuracy_std"] == pytest.approx(0.1414, abs=1e-4)
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith(("sil", "nsk"))}
    assert "60.0 +- -" in lines["sil"] and "+- 0.0" not in lines["sil"]
    assert "70.0 +- 14.1" in lines["nsk"]


def test_a_headline_from_a_one_class_refit_is_flagged_in_the_table_and_never_chosen(capsys):
    from automil.cli.tune import print_leaderboard

    trials = [_complete(0, 0.7, {})]
    truth = np.array([0, 1, 1, 0, 1])
    nested = dict(outer_best=[trials[0]] * 3)
    flat = result_row("fox", OPTIONS, Evaluation("sil", "svm", "fox/sil", trials, trials[0], **nested,
                                                 nested=[_scores(0.6, 0.5, one_class=True)] * 3,
                                                 predictions={Refit.NESTED: [(truth, np.ones(5, int))] * 3}))
    # every outer fold of five bags given one class, but not the same one: both classes over the bags
    folds_of_one = [(truth, np.ones(5, int)), (truth, np.zeros(5, int)), (truth, np.ones(5, int))]
    fine = result_row("fox", OPTIONS, Evaluation("nsk", "svm", "fox/nsk", trials, trials[0], **nested,
                                                 nested=[_scores(0.6, 0.5, one_class=True)] * 3,
                                                 predictions={Refit.NESTED: folds_of_one}))
    assert flat.headline.one_class and not fine.headline.one_class
    assert choose([flat, fine], [50, 50]).learner == "nsk"
    print_leaderboard([flat, fine], None)
    out = capsys.readouterr().out
    assert "sil (one class)" in out and "nsk (one class)" not in out
    assert "one class: the refits behind the headline predicted one class for every bag they scored" in out


def _nested_row(learner, outer, labels=(0, 1, 0, 1), metric="balanced_accuracy", tuning=0.5, fit_seconds=1.0):
    """A nested row whose outer fold ``i`` scored ``outer[i]`` (every metric), its headline folds holding
    the bags ``labels`` each."""
    trials = [_complete(0, tuning, {})]
    truth = np.asarray(labels)
    return result_row("fox", TuneOptions(folds=len(outer), repeats=1, protocol="nested", metric=metric, jobs=1),
                      Evaluation(learner, "p", f"fox/{learner}", trials, trials[0], outer_best=trials * len(outer),
                                 nested=[FoldScores(accuracy=v, balanced_accuracy=v, roc_auc=v) for v in outer],
                                 fit_seconds=[fit_seconds],
                                 predictions={Refit.NESTED: [(truth, truth)] * len(outer)}))


def test_chance_is_one_over_the_classes_for_bacc_one_half_for_auc_and_the_majority_share_for_accuracy():
    three = _nested_row("a", [0.9, 0.9], labels=(0, 1, 2, 2))
    assert row_chance(three) == pytest.approx(1 / 3)
    assert row_chance(three, "roc_auc") == 0.5
    assert row_chance(three, "accuracy") == pytest.approx(0.5)
    assert row_chance(LearnerResult(metric="accuracy")) is None, "no predictions: no chance level to hold it to"


@pytest.mark.parametrize("metric", ["balanced_accuracy", "accuracy", "roc_auc"])
@pytest.mark.parametrize("skill", [0.0, 1.0])
def test_an_inner_scores_standard_error_over_its_bags_is_the_spread_of_such_scores_on_such_bags(metric, skill):
    # 60 bags of one class and 140 of the other, scored by predictions that ignore them (skill 0) or lean
    # towards the truth (skill 1): the spread of 2,000 draws' scores against the closed form at their mean
    y = np.repeat([0, 1], [60, 140])
    scores = np.random.default_rng(3).normal(size=(2000, len(y))) + skill * y
    hits = (scores > 0.5 * skill) == y
    draws = {"accuracy": hits.mean(axis=1),
             "balanced_accuracy": (hits[:, y == 0].mean(axis=1) + hits[:, y == 1].mean(axis=1)) / 2,
             "roc_auc": (rankdata(scores, axis=1)[:, y == 1].sum(axis=1) - 140 * 141 / 2) / (60 * 140)}[metric]
    stderr = score_stderr(metric, float(np.mean(draws)), [60, 140])
    assert np.std(draws) == pytest.approx(stderr, rel=0.08)  # Hanley and McNeil's AUC at 0.76: 7% above
    assert bag_bound(np.mean(draws), metric, [60, 140]) == pytest.approx(np.mean(draws) - 2 * stderr)
    assert bag_bound(None, metric, [60, 140]) is None


def test_the_choice_is_the_best_tuning_score_above_chance_by_its_uncertainty_over_the_tuning_bags():
    # a heads the table by its nested figure, b by its tuning score: the choice looks at the tuning scores
    a, b = _nested_row("a", [0.9, 0.9, 0.9], tuning=0.62), _nested_row("b", [0.6, 0.6, 0.6], tuning=0.66)
    assert a.metric_value() > b.metric_value()
    assert choose([a, b], [100, 100]) == Choice("b")
    # on 15 bags of each class 0.66 is within twice its standard error (0.087) of chance; 0.62 below it too
    assert bag_bound(0.66, "balanced_accuracy", [15, 15]) < 0.5 < bag_bound(0.66, "balanced_accuracy", [100, 100])
    assert choose([a, b], [15, 15]).learner is None


def test_nothing_above_chance_chooses_nothing_and_the_run_says_why_in_one_line():
    from types import SimpleNamespace

    from automil.tune.driver import _select

    rows = [_nested_row("a", [0.9, 0.8, 0.9], tuning=0.53), _nested_row("b", [0.55, 0.45, 0.5], tuning=0.51)]
    choice = choose(rows, [30, 30])
    assert choice.learner is None
    bound = bag_bound(0.53, "balanced_accuracy", [30, 30])
    assert choice.reason == (f"no learner scored above chance on its tuning folds (BACC 0.50; the best, a, 0.53 "
                             f"with its lower bound at {bound:.2f} over 60 bags): no model is registered")
    lines = []
    assert _select(rows, choice, None, None, None, SimpleNamespace(message=lines.append)) is None
    assert lines == [choice.reason] and not any(r.model.selected for r in rows)


def _held_out(learner, y_pred, metric="balanced_accuracy", auc=None, tuning=0.7):
    """A hold-out row of 12 held-out bags (6 of each class) predicted ``y_pred`` (ROC AUC ``auc``), tuned to
    ``tuning`` on its inner bags."""
    options = TuneOptions(folds=4, repeats=1, protocol="holdout", metric=metric, jobs=1)
    trials = [_complete(0, tuning, {})]
    truth = np.array([0, 1] * 6)
    hits = float(np.mean(truth == np.asarray(y_pred)))  # both classes recalled alike below: BACC = ACC
    return result_row("fox", options, Evaluation(
        learner, "p", f"fox/{learner}", trials, trials[0], outer_best=trials, inner=[tuning],
        nested=[FoldScores(accuracy=hits, balanced_accuracy=hits, roc_auc=auc)], fit_seconds=[1.0],
        predictions={Refit.NESTED: [(truth, np.asarray(y_pred))]}))


def test_under_the_hold_out_protocol_a_rows_interval_is_the_bootstrap_of_its_held_out_bags():
    # 8 of 12 right: BACC 0.67, but on 12 bags the interval reaches below 0.5; 11 of 12 clear it
    weak, strong = _held_out("a", [0, 1] * 4 + [1, 0] * 2), _held_out("b", [0, 1] * 5 + [0, 0])
    assert weak.headline.interval[0] <= 0.5 < strong.headline.interval[0]
    assert weak.headline.interval[0] < weak.headline.balanced_accuracy < weak.headline.interval[1]


def test_a_hold_out_auc_gets_an_interval_from_its_standard_error_and_at_chance_is_never_registered():
    # AUC 0.51 on 12 held-out bags: 0.51 within 1.96 of Hanley and McNeil's standard error, by hand
    row = _held_out("a", [0, 1] * 3 + [1, 0] * 3, metric="roc_auc", auc=0.51, tuning=0.51)
    a, n = 0.51, 6
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    stderr = np.sqrt((a * (1 - a) + (n - 1) * (q1 - a * a) + (n - 1) * (q2 - a * a)) / (n * n))
    assert row.headline.interval == pytest.approx([a - 1.96 * stderr, a + 1.96 * stderr], abs=1e-3)
    assert row.headline.interval[0] < 0.5
    # tuned to AUC 0.51 on 40 inner bags: below chance by its uncertainty, nothing is chosen or registered,
    # and the procedure's one outer split ships nothing either
    inner_bags = np.array([20, 20])
    choice = choose([row], inner_bags)
    assert choice.learner is None and choice.reason.startswith("no learner scored above chance on its tuning folds "
                                                               "(AUC 0.50; the best, a, 0.51")
    assert procedure_row([row], [inner_bags], choice).choices == [None]
    strong = _held_out("b", [0, 1] * 6, metric="roc_auc", auc=0.95, tuning=0.9)
    assert choose([row, strong], inner_bags) == Choice("b")
    assert procedure_row([row, strong], [inner_bags]).choices == ["b"]


def test_the_ensemble_is_chosen_only_when_it_beats_its_best_member_on_the_tuning_folds():
    a, b = _nested_row("a", [0.80, 0.82], tuning=0.80), _nested_row("b", [0.70, 0.72], tuning=0.75)
    ensemble = _nested_row("ensemble", [0.84, 0.86], tuning=0.80)
    ensemble.members = [Member("a", 0.6), Member("b", 0.4)]
    assert choose([a, b, ensemble], [100, 100]) == Choice("a"), "level with its best member: its cost buys nothing"
    ensemble.tuning = replace(ensemble.tuning, score=0.81)
    assert choose([a, b, ensemble], [100, 100]) == Choice("ensemble")
    ensemble.tuning = replace(ensemble.tuning, score=None)
    assert choose([a, b, ensemble], [100, 100]) == Choice("a"), "no tuning score: nothing says it beats its members"
    # above a, but its gain over a alone (calibrated as the ensemble is) within twice its standard error
    ensemble.tuning = replace(ensemble.tuning, score=0.83, gain_bound=-0.01)
    assert choose([a, b, ensemble], [100, 100]) == Choice("a")
    ensemble.tuning = replace(ensemble.tuning, gain_bound=0.01)
    assert choose([a, b, ensemble], [100, 100]) == Choice("ensemble")


@pytest.mark.parametrize("metric", ["balanced_accuracy", "roc_auc"])
def test_a_gains_standard_error_is_the_spread_of_the_difference_of_two_scores_on_the_same_bags(metric):
    # two predictors of 200 bags that share most of their errors (a common part of each bag's score): the
    # spread of their scores' difference over 400 draws of the bags against the paired bootstrap of one
    # draw (the mean of four), and far below what two independent scores' errors would add up to
    y = np.repeat([0, 1], [60, 140])
    rng = np.random.default_rng(5)
    shared = rng.normal(size=(400, len(y))) + y
    ours, theirs = shared + 0.3 * rng.normal(size=shared.shape) + 0.1 * y, shared + 0.3 * rng.normal(size=shared.shape)

    def proba(scores):
        return np.stack([-scores, scores - 0.5], axis=-1)

    levels = np.array([[score(y, proba(o), metric), score(y, proba(t), metric)] for o, t in zip(ours, theirs,
                                                                                              strict=True)])
    bootstrapped = [gain_stderr(metric, y, proba(ours[d]), proba(theirs[d]), seed=d) for d in range(4)]
    spread = np.std(levels[:, 0] - levels[:, 1])
    assert np.mean(bootstrapped) == pytest.approx(spread, rel=0.15)
    unpaired = np.sqrt(2) * score_stderr(metric, float(levels[:, 1].mean()), [60, 140])
    assert spread < 0.6 * unpaired


def test_an_aucs_standard_error_is_hanley_and_mcneils_and_the_spread_of_a_bootstrap_of_its_bags():
    from sklearn.metrics import roc_auc_score

    from automil.evaluation.metrics import auc_stderr

    # 25 positive bags among 65, scored with some skill: the formula by hand (the rarer class as their
    # abnormal cases), and the spread of scikit-learn's AUC over 2,000 resamples of the bags within each class
    rng = np.random.default_rng(11)
    y = np.repeat([0, 1], [40, 25])
    scores = rng.normal(size=len(y)) + 1.2 * y
    auc = roc_auc_score(y, scores)
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    by_hand = np.sqrt((auc * (1 - auc) + 24 * (q1 - auc**2) + 39 * (q2 - auc**2)) / (25 * 40))
    assert auc_stderr(auc, [40, 25]) == pytest.approx(by_hand) == score_stderr("roc_auc", auc, [40, 25])
    drawn = [np.concatenate([rng.choice(np.flatnonzero(y == k), size=n) for k, n in ((0, 40), (1, 25))])
             for _ in range(2000)]
    assert np.std([roc_auc_score(y[d], scores[d]) for d in drawn]) == pytest.approx(by_hand, rel=0.15)
