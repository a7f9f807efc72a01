"""automil's own nested figure from evaluations built by hand: each outer split chooses by its inner scores
with the rule of the final choice, and is scored on its outer fold."""

from dataclasses import replace

import numpy as np
import pytest

from automil.bags import Bags
from automil.evaluation.folds_file import RunFolds
from automil.evaluation.metrics import FoldScores, score
from automil.records import PROCEDURE, LearnerResult, Member, Status, TrialRecord, TrialState
from automil.tune.final.choice import Choice, choose
from automil.tune.final.ensemble_row import (
    NESTED_SCORES,
    Candidate,
    choose_members,
    ensemble_nested,
    out_of_fold_order,
)
from automil.tune.final.leaderboard import Evaluation, Refit, procedure_row, result_row
from automil.tune.options import TuneOptions
from automil.tune.studies.plan import Plan

pytestmark = pytest.mark.unit

OPTIONS = TuneOptions(folds=3, repeats=1, protocol="nested", metric="balanced_accuracy", jobs=1)
# every outer split's inner scores cover 100 bags of each class: BACC 0.6 is above chance by twice its
# standard error there (0.07), 0.55 is not
INNER_BAGS = [np.array([100, 100])] * 3


def _row(learner, inner, outer, fit_seconds, one_class=False, inner_folds=(), members=(), gain_bound=()):
    """A learner's row whose outer split ``i`` scored ``inner[i]`` on its inner folds (``inner_folds[i]`` on
    each) and ``outer[i]`` (BACC; ACC is BACC + 0.05) on outer fold ``i``, its folds holding two bags of
    each of two classes (chance: BACC 0.5)."""
    best = TrialRecord(0, TrialState.COMPLETE, 0.5, attrs={"estimator_params": {}})
    nested = [FoldScores(accuracy=b + 0.05, balanced_accuracy=b, one_class=one_class) for b in outer]
    truth = np.array([0, 1, 0, 1])
    return result_row("fox", OPTIONS, Evaluation(learner, "p", f"fox/{learner}", [best], best, outer_best=[best] * 3,
                                                 nested=nested, inner=inner, fit_seconds=[fit_seconds],
                                                 inner_folds=list(inner_folds), members=list(members),
                                                 gain_bound=list(gain_bound),
                                                 predictions={Refit.NESTED: [(truth, truth * (not one_class))] * 3}))


def test_each_outer_split_chooses_by_its_inner_scores_and_is_scored_on_its_outer_fold():
    rows = [_row("a", inner=[0.80, 0.60, 0.70], outer=[0.50, 0.90, 0.60], fit_seconds=4.0),
            _row("b", inner=[0.70, 0.90, 0.70], outer=[0.90, 0.60, 0.80], fit_seconds=1.0),
            # best inner scores everywhere, but a fold predicted one class: the final choice never takes it
            _row("c", inner=[0.99, 0.99, 0.99], outer=[1.0, 1.0, 1.0], fit_seconds=0.1, one_class=True)]
    procedure = procedure_row(rows, INNER_BAGS)
    # split 0: a (0.80 > 0.70); split 1: b (0.90); split 2: a tie at 0.70 goes to the cheaper b
    assert procedure.choices == ["a", "b", "b"]
    assert [s.inner for s in procedure.nested.outer_splits] == [0.80, 0.90, 0.70]
    by_hand = [0.50, 0.60, 0.80]
    assert procedure.headline.balanced_accuracy == pytest.approx(np.mean(by_hand))
    assert procedure.headline.balanced_accuracy_std == pytest.approx(np.std(by_hand, ddof=1))
    assert procedure.headline.accuracy == pytest.approx(np.mean(by_hand) + 0.05)
    assert procedure.status == Status.OK and procedure.learner == PROCEDURE and procedure.headline.kind == "nested"


def test_a_split_where_no_row_can_be_chosen_leaves_the_procedure_without_a_figure_and_says_why():
    rows = [_row("a", inner=[0.8, None, 0.7], outer=[0.5, 0.9, 0.6], fit_seconds=1.0)]
    procedure = procedure_row(rows, INNER_BAGS)
    assert procedure.choices == ["a", None, "a"]
    assert procedure.status == Status.NO_RESULT and procedure.headline.balanced_accuracy is None
    assert "outer split(s) 1" in procedure.error


def test_a_split_where_no_inner_score_clears_chance_by_its_own_uncertainty_ships_nothing_and_scores_chance():
    # split 1: a's 0.55 and b's 0.50 are within twice their standard errors over 200 bags of chance; split 0:
    # a's 0.60 clears it though its two inner folds scored 0.2 and 1.0 (the bags, not their spread, decide)
    rows = [_row("a", inner=[0.60, 0.55, 0.70], outer=[0.70, 0.90, 0.80], fit_seconds=1.0,
                 inner_folds=[[0.2, 1.0], [0.55, 0.55], [0.7, 0.7]]),
            _row("b", inner=[0.58, 0.50, 0.90], outer=[0.60, 0.95, 0.85], fit_seconds=1.0,
                 inner_folds=[[0.58, 0.58], [0.5, 0.5], [0.9, 0.9]])]
    procedure = procedure_row(rows, INNER_BAGS)
    assert procedure.choices == ["a", None, "b"]
    chance = procedure.nested.outer_splits[1]
    assert chance.inner is None and (chance.accuracy, chance.balanced_accuracy, chance.roc_auc) == (0.5, 0.5, 0.5)
    assert procedure.headline.balanced_accuracy == pytest.approx(np.mean([0.70, 0.5, 0.85]))
    assert procedure.status == Status.OK and "outer split(s) 1" in procedure.error
    assert "scored as chance" in procedure.error
    # the same scores on 20 bags of each class: a's 0.60 no longer clears chance, b's 0.90 still does
    assert procedure_row(rows, [np.array([20, 20])] * 3).choices == [None, None, "b"]


def test_nothing_above_chance_anywhere_leaves_the_procedure_at_chance_and_says_no_model_is_registered():
    rows = [_row("a", inner=[0.50, 0.45, 0.40], outer=[0.5, 0.4, 0.6], fit_seconds=1.0)]
    choice = choose(rows, [150, 150])  # its tuning score, 0.5 on all bags: nothing to register either
    procedure = procedure_row(rows, INNER_BAGS, choice)
    assert procedure.choices == [None, None, None] and procedure.headline.balanced_accuracy == pytest.approx(0.5)
    assert "outer split(s) 0, 1, 2" in procedure.error
    assert choice.learner is None and procedure.error.endswith(choice.reason)
    assert choice.reason.endswith("no model is registered")


def test_the_ensemble_is_chosen_in_a_split_only_where_its_inner_score_beats_its_best_member_there():
    rows = [_row("a", inner=[0.80, 0.80, 0.70], outer=[0.7, 0.7, 0.7], fit_seconds=1.0),
            _row("b", inner=[0.60, 0.90, 0.60], outer=[0.6, 0.6, 0.6], fit_seconds=1.0),
            # split 0 combines a and b: level with a, so a; split 1 combines only a: above it, but b's 0.90
            # is the best inner score there; split 2 combines a and b and beats both
            _row("ensemble", inner=[0.80, 0.85, 0.75], outer=[0.9, 0.9, 0.9], fit_seconds=0.1,
                 members=[["a", "b"], ["a"], ["a", "b"]])]
    assert procedure_row(rows, INNER_BAGS).choices == ["a", "b", "ensemble"]
    # split 2's gain over a alone is within twice its standard error over the bags there: a
    rows[2] = _row("ensemble", inner=[0.80, 0.85, 0.75], outer=[0.9, 0.9, 0.9], fit_seconds=0.1,
                   members=[["a", "b"], ["a"], ["a", "b"]], gain_bound=[0.01, 0.01, -0.01])
    assert procedure_row(rows, INNER_BAGS).choices == ["a", "b", "a"]


HOLDOUT = TuneOptions(folds=3, repeats=1, protocol="holdout", metric="balanced_accuracy", jobs=1)


def _held_out(learner, inner, outer, fit_seconds, one_class=False, members=None, gain_bound=None):
    """A hold-out row tuned to ``inner`` on its inner bags (its main study is its one outer split's: the
    tuning score is the inner score) and scoring ``outer`` (BACC) on the held-out bags; an ensemble of
    ``members`` with the lower bound ``gain_bound`` of its gain over its best member."""
    best = TrialRecord(0, TrialState.COMPLETE, inner, attrs={"estimator_params": {}})
    truth = np.array([0, 1, 0, 1])
    row = result_row("fox", HOLDOUT, Evaluation(learner, "p", f"fox/{learner}", [best], best, outer_best=[best],
                                                nested=[FoldScores(accuracy=outer, balanced_accuracy=outer,
                                                                   one_class=one_class)],
                                                inner=[inner],
                                                fit_seconds=[fit_seconds], members=[members],
                                                gain_bound=[gain_bound], predictions={Refit.NESTED: [(truth, truth)]}))
    if members is not None:
        row.members = [Member(n, 1 / len(members)) for n in members]
        row.tuning = replace(row.tuning, gain_bound=gain_bound)
    return row


def test_the_shipped_model_is_the_procedures_choice_not_the_best_headline():
    # a heads the table on the held-out bags, b on the inner ones; the ensemble of both is best held out
    # but level with b inside: the run ships what the procedure chose, b, whose held-out figure is automil's
    rows = [_held_out("a", inner=0.70, outer=0.90, fit_seconds=1.0),
            _held_out("b", inner=0.80, outer=0.75, fit_seconds=2.0),
            _held_out("ensemble", inner=0.80, outer=0.95, fit_seconds=3.0, members=["a", "b"], gain_bound=0.02)]
    best_headline = max(rows, key=lambda r: r.metric_value())
    choice = choose(rows, INNER_BAGS[0])
    procedure = procedure_row(rows, INNER_BAGS[:1], choice)
    assert best_headline.learner == "ensemble" and choice == Choice("b") and procedure.choices == ["b"]
    assert procedure.headline.balanced_accuracy == choice.row(rows).headline.balanced_accuracy == 0.75
    # under nested CV, the run's choice is the same rule on the main studies' tuning scores
    nested = [_row("a", inner=[0.8, 0.8, 0.8], outer=[0.9, 0.9, 0.9], fit_seconds=1.0),
              _row("b", inner=[0.7, 0.7, 0.7], outer=[0.6, 0.6, 0.6], fit_seconds=1.0)]
    nested[0].tuning, nested[1].tuning = replace(nested[0].tuning, score=0.70), replace(nested[1].tuning, score=0.75)
    assert procedure_row(nested, INNER_BAGS).choices == ["a"] * 3 and choose(nested, [150, 150]) == Choice("b")


@pytest.mark.parametrize("seed", range(40))
def test_under_the_hold_out_protocol_the_run_chooses_what_the_procedure_chose_in_its_outer_split(seed):
    # random rows, some at chance on 30 + 30 inner bags, some one-class, ties in cost, an ensemble of some
    rng = np.random.default_rng(seed)
    counts = np.array([30, 30])
    rows = [_held_out(name, inner=round(float(rng.uniform(0.45, 0.8)), 2), outer=float(rng.uniform(0.4, 1.0)),
                      fit_seconds=float(rng.choice([1.0, 2.0])), one_class=bool(rng.random() < 0.2))
            for name in "abcd"]
    members = sorted(rng.choice(list("abcd"), size=2, replace=False).tolist())
    rows.append(_held_out("ensemble", inner=round(float(rng.uniform(0.5, 0.85)), 2), outer=float(rng.uniform(0.4, 1)),
                          fit_seconds=3.0, members=members, gain_bound=float(rng.uniform(-0.02, 0.02))))
    choice = choose(rows, counts)
    assert choice.learner == procedure_row(rows, [counts], choice).choices[0]


def test_the_tuned_protocol_has_no_procedure_row_and_rows_round_trip_through_json():
    tuned = LearnerResult(dataset="fox", learner="a", protocol="tuned", status=Status.OK)
    assert procedure_row([tuned], INNER_BAGS) is None
    procedure = procedure_row([_row("a", inner=[0.8, 0.6, 0.7], outer=[0.5, 0.9, 0.6], fit_seconds=1.0)],
                              INNER_BAGS)
    assert LearnerResult.from_dict(procedure.to_dict()) == procedure


def test_a_split_left_untuned_sees_the_defaults_on_its_inner_folds_only():
    assignment = np.array([0, 1, 2, 0, 1, 2])
    plan = Plan("fox", ["a"], OPTIONS, _folds(assignment), 0.0)
    # the main study's out-of-fold order is fold by fold: bags 0 3 | 1 4 | 2 5; bag b scored 10 * b
    defaults = TrialRecord(0, TrialState.COMPLETE, 0.7, queued=True,
                           attrs={"fold_balanced_accuracy": [0.5, 0.7, 0.9], "oof_scores": [0, 30, 10, 40, 20, 50]})
    tuned = TrialRecord(3, TrialState.COMPLETE, 0.8, attrs={"oof_scores": [1, 2, 3, 4]})
    candidate = Candidate([defaults], [[tuned], [], []])
    value, _, scores = candidate.inner(plan, 0)
    assert value == 0.8 and scores.tolist() == [1, 2, 3, 4]
    value, folds, scores = candidate.inner(plan, 1)  # untuned: fold 1's score and bags are left out
    assert value == pytest.approx(0.7) and folds == [0.5, 0.9] and scores.tolist() == [0, 30, 20, 50]
    value, folds, scores = candidate.inner(plan, 2)
    assert value == pytest.approx(0.6) and folds == [0.5, 0.7] and scores.tolist() == [0, 30, 10, 40]


def test_the_ensemble_selects_in_splits_left_untuned_from_the_learners_defaults():
    # two learners, no outer split tuned: each split refits the defaults, and the ensemble builds from them
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1, 0])
    plan = Plan("fox", ["a", "b"], OPTIONS, _folds(np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])), 0.0)
    signs = np.where(y == 1, 1.0, -1.0)
    candidates = {}
    for name, noise in (("a", [1, 1, 1, 1, -1, 1, 1, 1, 1]), ("b", [1, 1, -1, 1, 1, 1, 1, 1, 1])):
        scores = signs * np.asarray(noise, dtype=float) * (1.0 + np.arange(9) / 10)
        defaults = TrialRecord(0, TrialState.COMPLETE, 0.8, queued=True,
                               attrs={"fold_balanced_accuracy": [0.8, 0.8, 0.8], "oof_scores": scores.tolist()})
        candidates[name] = Candidate([defaults], [[], [], []], scores={NESTED_SCORES: scores})
    evaluation, _ = ensemble_nested(plan, Bags.from_list([np.zeros((1, 1))] * 9, y), candidates)
    assert evaluation.errors == [] and evaluation.tuned_splits == 3
    assert all(s is not None for s in evaluation.nested) and all(v is not None for v in evaluation.inner)
    # each split's inner score is the mean of its two inner folds', over the learners it combined there
    assert [np.mean(folds) for folds in evaluation.inner_folds] == pytest.approx(evaluation.inner)
    assert all(len(folds) == 2 and set(members) <= {"a", "b"}
               for folds, members in zip(evaluation.inner_folds, evaluation.members, strict=True))
    # and the lower bound of its gain over its best member alone: 0 where every block's selection is that
    # member alone (no gain, no spread), below it where six bags cannot tell a combination from the member
    assert evaluation.gain_bound[1] == 0 and all(bound < 0 for bound in evaluation.gain_bound[::2])


def _folds(assignment) -> RunFolds:
    """The studies' folds ``assignment`` over bags named by position, no repeats."""
    return RunFolds("fox", tuple(str(i) for i in range(len(assignment))), assignment, ())


def test_the_ensembles_inner_score_comes_from_folds_its_selection_did_not_see():
    # eight learners whose out-of-fold scores are noise: selected and scored on the same bags, a combination
    # of them looks better than chance by the selection alone; selected without each inner fold, it does not
    rng = np.random.default_rng(0)
    y = np.tile([0, 1], 45)
    assignment = np.arange(90) % 3
    plan = Plan("fox", [], OPTIONS, _folds(assignment), 0.0)
    candidates = {}
    for name in "abcdefgh":
        scores = rng.normal(size=90)
        defaults = TrialRecord(0, TrialState.COMPLETE, 0.5, queued=True,
                               attrs={"fold_balanced_accuracy": [0.5] * 3, "oof_scores": scores.tolist()})
        candidates[name] = Candidate([defaults], [[], [], []], scores={NESTED_SCORES: scores})
    evaluation, _ = ensemble_nested(plan, Bags.from_list([np.zeros((1, 1))] * 90, y), candidates)
    seen = []  # each split's selection scored on the bags it was selected on
    for i in range(3):
        order = out_of_fold_order(assignment, i)
        oof = {n: c.inner(plan, i).oof for n, c in candidates.items()}
        seen.append(score(y[order], choose_members(oof, order, y, "balanced_accuracy").combined(oof),
                          "balanced_accuracy"))
    assert np.mean(seen) > 0.6  # BACC 0.63 on 60 bags of noise, two binomial standard errors above chance
    assert np.mean(evaluation.inner) < np.mean(seen) - 0.1 and abs(np.mean(evaluation.inner) - 0.5) < 0.05


def test_a_registered_first_model_is_a_candidate_of_the_automil_rows_split_as_of_the_final_choice():
    # the first model's inner score is above the tuned row's: the run keeps it (first_model.keeps), so the
    # automil row must choose it too and measure its held-out figure, not the tuned row's
    from automil import plugins
    from automil.tune.final.first_model import FirstModel, keeps
    from automil.tune.final.first_model import _row as first_model_row

    plan = Plan("fox", ["a"], HOLDOUT, _folds(np.array([0, 1, 2, 0, 1, 2])), 0.0)
    y = np.array([0, 1, 0, 1])
    figures = FoldScores(accuracy=0.95, balanced_accuracy=0.95)
    first = first_model_row(plan, plugins.get_learner("bag-stats"), {}, figures, 0.90, 1.0, y, y, [0, 1])
    tuned = _held_out("a", inner=0.70, outer=0.60, fit_seconds=1.0)
    assert procedure_row([tuned], [np.array([100, 100])]).choices == ["a"]
    procedure = procedure_row([tuned, first], [np.array([100, 100])])
    assert procedure.choices == [first.learner]
    assert procedure.headline.balanced_accuracy == pytest.approx(0.95)  # the first model's held-out figure
    kept = FirstModel("bag-stats", {}, 0.90, 0.95, 0.9, 0.5, first, registered="models:/automil-fox/1")
    assert keeps(kept, tuned, procedure.choices[0])
    # level inner scores: the rule of every choice takes the cheaper fit, and the first model gives way to it
    level = _held_out("a", inner=0.90, outer=0.60, fit_seconds=0.5)
    level.model = replace(level.model, uri="runs:/a/model")  # a logged model to ship
    assert procedure_row([level, first], [np.array([100, 100])]).choices == ["a"]
    assert not keeps(kept, level, "a")
