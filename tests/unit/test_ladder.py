"""The ladder of the hold-out protocol on made-up learner states: which rung runs next, who is promoted to
all the bags, what a screened learner reports, and the protocol chosen by the data's size."""

from datetime import datetime, timedelta

import numpy as np
import pytest

from automil.bags import Bags
from automil.evaluation.folds import bag_sample
from automil.evaluation.metrics import bootstrap_interval
from automil.records import TrialAttr, TrialRecord, TrialState
from automil.tune.backend.optuna_trials import counts_toward_budget
from automil.tune.options import HOLDOUT_CELLS, HOLDOUT_FOLDS, TuneOptions
from automil.tune.schedule.budget import LearnerState, StudyState, final_fits, learner_state, next_step
from automil.tune.schedule.ladder import (
    CHEAP_SHARE,
    ETA,
    FLAT_EVIDENCE,
    LADDER,
    MIN_PROMOTED,
    PROMOTE_MARGIN,
    RUNG_FLOOR,
    RUNG_MIN_BAGS,
    RUNG_SLACK,
    RungState,
    predicted_score,
    promoted,
    rung_fraction,
    rungs_in_use,
    screened_note,
    top_rung,
)

LOW, MID = LADDER


def state(name, rungs=(), best=None, trials=0, too_slow=False, expected=None):
    """A learner with trials on the rungs ``rungs`` (``(fraction, score, seconds)``)."""
    return LearnerState(name, (StudyState(trials=trials, best=best),), expected_seconds=expected, too_slow=too_slow,
                        rungs=tuple(RungState(*r) for r in rungs))


def test_every_learner_runs_the_lowest_rung_first_within_a_small_share():
    states = [state("b"), state("a"), state("c", rungs=[(LOW, 0.6, 1.0)])]
    step = next_step(states, 20, time_left=160.0, jobs=2, ladder=LADDER)
    assert (step.learner, step.phase, step.fraction) == ("a", "rung", LOW)
    # the share is among the three learners of the rung, c included: the last to go gets no more than the first
    assert step.time_limit == pytest.approx(160.0 * 2 / 3 * LOW * RUNG_SLACK)
    # a small share is raised to the floor, never past the time left
    assert next_step(states, 20, time_left=20.0, ladder=LADDER).time_limit == pytest.approx(RUNG_FLOOR)
    assert next_step(states, 20, time_left=3.0, ladder=LADDER).time_limit == pytest.approx(3.0)


def test_the_second_rung_goes_cheapest_first_to_learners_scored_on_the_first_and_fitting_their_share():
    states = [state("slow", rungs=[(LOW, 0.7, 5.0)]), state("cheap", rungs=[(LOW, 0.6, 1.0)]),
              state("failed", rungs=[(LOW, None, 3.0)])]
    step = next_step(states, 20, time_left=100.0, ladder=LADDER)
    assert (step.learner, step.fraction) == ("cheap", MID)
    # last to wait, it shares the rung with cheap: 100 / 2 x 1/4 x 2 = 25 s, and needs about 20 s there
    states[1] = state("cheap", rungs=[(LOW, 0.6, 1.0), (MID, 0.62, 4.0)])
    step = next_step(states, 20, time_left=100.0, ladder=LADDER)
    assert (step.learner, step.fraction, step.time_limit) == ("slow", MID, pytest.approx(25.0))
    # one that needs about 40 s does not fit that share and stays on the lowest rung
    states[0] = state("slow", rungs=[(LOW, 0.7, 10.0)])
    assert next_step(states, 20, time_left=100.0, ladder=LADDER).fraction is None


def test_a_learner_that_cannot_fit_the_next_rung_is_left_where_it_is_and_reported_screened():
    slow = state("slow", rungs=[(LOW, 0.7, 20.0)])  # about 80 s on 1/4 of the bags: more than its 50 s
    cheap = state("cheap", rungs=[(LOW, 0.6, 1.0), (MID, 0.62, 4.0)])
    step = next_step([slow, cheap], 20, time_left=100.0, ladder=LADDER)
    assert (step.learner, step.phase, step.fraction) == ("cheap", "defaults", None)
    assert screened_note(slow.rungs, "balanced_accuracy") == "screened: BACC 0.70 on 1/16 of the bags, ~320 s on all"


def test_a_curve_still_rising_is_promoted_over_a_flat_leader_on_the_same_rung():
    flat = state("flat", rungs=[(LOW, 0.70, 1.0), (MID, 0.71, 4.0)])
    rising = state("rising", rungs=[(LOW, 0.55, 1.0), (MID, 0.68, 4.0)])
    others = [state(f"o{i}", rungs=[(LOW, 0.60, 1.0), (MID, 0.60, 4.0)]) for i in range(6)]
    assert predicted_score(rising) == pytest.approx(0.81)
    assert promoted([flat, rising, *others])[:2] == ["rising", "flat"]
    # on the lowest rung alone the rising curve is far behind, and it is not left behind for it
    low_only = [state("flat", rungs=[(LOW, 0.70, 1.0)]), state("rising", rungs=[(LOW, 0.55, 1.0)])]
    assert promoted(low_only) == []
    assert next_step(low_only, 20, time_left=1000.0, ladder=LADDER).fraction == MID


def test_promotion_keeps_the_best_share_within_the_margin_and_never_fewer_than_the_minimum():
    scores = [0.80, 0.79, 0.78, 0.77, 0.70, 0.60, 0.60, 0.60, 0.60, 0.60, 0.60, 0.60]
    states = [state(f"l{i:02d}", rungs=[(LOW, s, 1.0), (MID, s, 4.0)]) for i, s in enumerate(scores)]
    kept = promoted(states)
    assert len(kept) == max(MIN_PROMOTED, int(np.ceil(len(states) / ETA))) == 3
    far = [state("a", rungs=[(MID, 0.9, 4.0)]), state("b", rungs=[(MID, 0.9 - 2 * PROMOTE_MARGIN, 4.0)]),
           state("c", rungs=[(MID, 0.3, 4.0)]), state("d", rungs=[(MID, 0.3, 4.0)]),
           state("e", rungs=[(MID, 0.3, 4.0)]), state("f", rungs=[(MID, 0.3, 4.0)]),
           state("g", rungs=[(MID, 0.3, 4.0)]), state("h", rungs=[(MID, 0.3, 4.0)]),
           state("i", rungs=[(MID, 0.3, 4.0)])]
    assert promoted(far) == ["a", "b"]  # the minimum, though b is beyond the margin; c neither


def test_only_learners_on_the_top_rung_are_tuned_on_all_bags():
    top = state("top", rungs=[(LOW, 0.7, 1.0), (MID, 0.8, 4.0)], best=0.8, trials=1, expected=16.0)
    second = state("second", rungs=[(LOW, 0.7, 1.0), (MID, 0.78, 4.0)], best=0.79, trials=1, expected=16.0)
    # behind: about 160 s on all the bags, more than the CHEAP_SHARE of 500 s
    behind = [state(f"b{i}", rungs=[(LOW, 0.5, 10.0), (MID, 0.5, 40.0)]) for i in range(6)]
    assert top_rung([top, second, *behind], LADDER, 500.0) == {"top", "second"}
    for _ in range(5):
        step = next_step([top, second, *behind], 20, time_left=500.0, ladder=LADDER)
        assert step.learner in {"top", "second"} and step.phase == "promise" and step.fraction is None


def test_rung_trials_never_count_never_are_best_and_are_read_back_as_rungs():
    start = datetime(2026, 1, 1)
    rung = TrialRecord(0, TrialState.FAIL, attrs={TrialAttr.RUNG: LOW, "balanced_accuracy": 0.7}, start=start,
                       end=start + timedelta(seconds=2))
    stopped = TrialRecord(1, TrialState.FAIL, attrs={TrialAttr.RUNG: MID, TrialAttr.ERROR: "too slow",
                                                     TrialAttr.INTERRUPTED: True}, start=start,
                          end=start + timedelta(seconds=8))
    assert not counts_toward_budget(rung) and not counts_toward_budget(stopped)
    learner = learner_state("x", [[rung, stopped]], "balanced_accuracy", 0.0, start.timestamp() + 10)
    assert learner.main.trials == 0 and learner.main.best is None and learner.expected_seconds is None
    assert learner.rungs == (RungState(LOW, 0.7, 2.0), RungState(MID, None, 8.0))


def test_the_final_evaluation_of_a_hold_out_costs_one_refit_and_the_model():
    # a trial on 4 folds held out one: 3 fits on 2 of 4 folds; the refit on 3 of 4, the model on 4 of 4
    assert final_fits(4, "holdout") == pytest.approx((3 / 4 + 1) / (3 * 2 / 4))
    # with an inner hold-out, a trial is one fit on 4/5 of the 3 of 4 folds
    assert final_fits(4, "holdout", inner_holdout=True) == pytest.approx((3 / 4 + 1) / (3 / 4 * 4 / 5))
    assert final_fits(6) == pytest.approx(1 + 1 / 6)


def _bags(n_instances, n_features):
    sizes = np.full(10, n_instances // 10)
    return Bags(np.zeros((int(sizes.sum()), n_features), dtype=np.float32), np.r_[0, np.cumsum(sizes)],
                np.array([0, 1] * 5))


def test_the_protocol_by_size_nests_small_data_and_holds_out_large_data():
    auto = TuneOptions()
    assert auto.protocol == "auto"
    small = auto.for_data(_bags(10_000, 64))
    # 10 bags: 4 folds, not 6 (automil.evaluation.folds.folds_for_size)
    assert (small.protocol, small.folds, small.outer_folds, small.held_out) == ("nested", 4, list(range(4)), None)
    large = auto.for_data(_bags(HOLDOUT_CELLS // 8, 8))
    assert (large.protocol, large.folds, large.outer_folds, large.held_out) == ("holdout", HOLDOUT_FOLDS, [0], 0)
    assert large.splits == [None]  # one study a learner: the held-out fold's tuning
    assert TuneOptions(protocol="nested").for_data(_bags(HOLDOUT_CELLS // 8, 8)).protocol == "nested"
    with pytest.raises(ValueError, match="--protocol holdout needs --folds 3"):
        TuneOptions(protocol="holdout", folds=2).check()


def test_rung_samples_are_stratified_nested_and_keep_two_bags_of_every_class():
    y = np.array([0] * 40 + [1] * 24)
    train = np.arange(64)
    low, mid = bag_sample(y, train, LOW, 3), bag_sample(y, train, MID, 3)
    assert set(low) <= set(mid)
    assert [int(np.sum(y[low] == c)) for c in (0, 1)] == [3, 2]
    assert [int(np.sum(y[mid] == c)) for c in (0, 1)] == [10, 6]


def test_the_bootstrap_interval_of_a_confusion_matrix_holds_its_figure_and_narrows_with_more_bags():
    small = bootstrap_interval([[8, 2], [3, 7]], "balanced_accuracy", seed=0)
    large = bootstrap_interval([[80, 20], [30, 70]], "balanced_accuracy", seed=0)
    assert small[0] < 0.75 < small[1] and large[0] < 0.75 < large[1]
    assert large[1] - large[0] < small[1] - small[0]
    assert bootstrap_interval([[5, 0], [0, 5]], "accuracy", seed=0) == [1.0, 1.0]


def test_a_learner_cheap_on_all_the_bags_reaches_them_whatever_its_rung_scores():
    # scored low on both rungs (a curve that misses a jump with more bags), about 16 s on all the bags
    cheap_low = state("cheap-low", rungs=[(LOW, 0.50, 1.0), (MID, 0.52, 4.0)])
    dear_low = state("dear-low", rungs=[(LOW, 0.50, 10.0), (MID, 0.52, 40.0)])
    stopped = state("stopped", rungs=[(LOW, 0.50, 1.0), (MID, None, 4.0)])  # no score where it was stopped
    leaders = [state(f"lead{i}", rungs=[(LOW, 0.8, 5.0), (MID, 0.8, 20.0)]) for i in range(2)]  # ~80 s on all
    learners = [cheap_low, dear_low, stopped, *leaders]
    assert "cheap-low" not in promoted(learners)
    budget = 16.0 / CHEAP_SHARE  # time left at which 16 s is the cheap share, on one job
    assert top_rung(learners, LADDER, budget) == {"cheap-low", "lead0", "lead1"}
    assert top_rung(learners, LADDER, budget * 0.9) == {"lead0", "lead1"}
    assert "cheap-low" in top_rung(learners, LADDER, budget * 0.6, jobs=2)
    assert top_rung(learners, LADDER, None) == {"lead0", "lead1"}  # no budget: promise alone
    # the defaults on all the bags go cheapest first, by the cost estimated from the rungs
    step = next_step(learners, 20, time_left=budget, ladder=LADDER)
    assert (step.learner, step.phase) == ("cheap-low", "defaults")


def test_a_rung_holds_at_least_its_minimum_of_bags():
    assert rung_fraction(LOW, 1600) == LOW  # 100 bags
    assert rung_fraction(LOW, 182) == pytest.approx(RUNG_MIN_BAGS / 182)
    assert rung_fraction(MID, 20) == 1.0


def _at_chance(fraction, seconds=1.0):
    return (fraction, 0.51, seconds, False)


def test_a_rung_flat_at_chance_on_this_data_is_climbed_no_more_and_judges_no_one():
    flat_low = [state(n, rungs=[_at_chance(LOW)]) for n in "abc"[:FLAT_EVIDENCE]]
    states = [*flat_low, state("new")]
    assert rungs_in_use(states, LADDER) == (MID,)
    # the new learner skips the flat rung; those at chance there climb on, as if it were not there
    step = next_step(states, 20, time_left=200.0, ladder=LADDER)
    assert (step.learner, step.fraction) == ("a", MID)
    # one learner above chance on the rung keeps it in use: there the curve carries signal
    states[0] = state("a", rungs=[(LOW, 0.8, 1.0, True)])
    assert rungs_in_use(states, LADDER) == LADDER
    assert next_step(states, 20, time_left=200.0, ladder=LADDER).fraction == LOW  # "new" climbs it


def test_when_every_rung_is_flat_at_chance_every_learner_goes_on_to_all_the_bags():
    states = [state(n, rungs=[_at_chance(LOW), _at_chance(MID, seconds=s)]) for n, s in (("x", 4.0), ("y", 2.0))]
    states.append(state("z", rungs=[_at_chance(LOW), _at_chance(MID, seconds=9.0)]))
    states.append(state("never"))
    assert rungs_in_use(states, LADDER) == ()
    assert top_rung(states, (), time_left=100.0) == {"x", "y", "z", "never"}
    step = next_step(states, 20, time_left=100.0, ladder=LADDER)
    # cheapest first by the cost its rungs measured; the learner without a rung last
    assert (step.learner, step.phase, step.fraction) == ("y", "defaults", None)


def test_a_rung_trial_stopped_at_its_limit_leaves_the_learner_free_to_run_on_all_the_bags():
    start = datetime(2026, 1, 1)
    stopped = TrialRecord(0, TrialState.FAIL, attrs={TrialAttr.RUNG: LOW, TrialAttr.ERROR: "too slow",
                                                     TrialAttr.TOO_SLOW: True, TrialAttr.INTERRUPTED: True},
                          start=start, end=start + timedelta(seconds=5))
    net = learner_state("net", [[stopped]], "balanced_accuracy", 0.0, start.timestamp() + 10)
    assert not net.too_slow  # a rung's few seconds can be passed by one-time costs alone
    others = [state("a", rungs=[(LOW, 0.7, 1.0), (MID, 0.75, 3.0)]), state("b", rungs=[(LOW, 0.6, 1.0)])]
    assert "net" in top_rung([net, *others], LADDER, time_left=100.0)


def test_a_learner_whose_fits_end_in_their_time_skips_the_rungs_for_all_the_bags():
    # a network's low fidelity is its epochs on all the bags: a rung's seconds would stop it having learnt
    # nothing; the others still climb
    step = next_step([state("net"), state("a")], 20, time_left=160.0, ladder=LADDER, anytime=("net",))
    assert (step.learner, step.fraction) == ("a", LOW)
    tuned = [state("net"), state("a", rungs=[(LOW, 0.7, 1.0), (MID, 0.75, 3.0)], best=0.8, trials=1, expected=9.0)]
    step = next_step(tuned, 20, time_left=160.0, ladder=LADDER, anytime=("net",))
    assert (step.learner, step.phase, step.fraction) == ("net", "defaults", None)
    assert next_step(tuned, 20, time_left=160.0, ladder=LADDER).fraction == LOW  # as any learner, it would climb


def test_a_rung_score_is_informative_only_above_chance_by_twice_its_standard_error():
    start = datetime(2026, 1, 1)

    def rung(folds):
        return TrialRecord(0, TrialState.FAIL, attrs={TrialAttr.RUNG: LOW, "balanced_accuracy": float(np.mean(folds)),
                                                      "fold_balanced_accuracy": folds},
                           start=start, end=start + timedelta(seconds=1))

    noisy = learner_state("x", [[rung([0.45, 0.75, 0.6])]], "balanced_accuracy", 0.0, 0.0, chance=0.5)
    steady = learner_state("x", [[rung([0.66, 0.7, 0.68])]], "balanced_accuracy", 0.0, 0.0, chance=0.5)
    assert not noisy.rungs[0].informative and steady.rungs[0].informative
    assert learner_state("x", [[rung([0.45, 0.75, 0.6])]], "balanced_accuracy", 0.0, 0.0).rungs[0].informative
