"""The budget policy on made-up study states: which learner and study get the next trial."""

from dataclasses import replace
from datetime import datetime, timedelta

import numpy as np
import pytest

from automil.evaluation.folds_file import RunFolds
from automil.records import TrialRecord, TrialState
from automil.tune.final.ensemble_row import Candidate
from automil.tune.final.tasks import leader_model_seconds, longest_first, nested_tasks
from automil.tune.options import TuneOptions
from automil.tune.portfolio.fit_costs import FitCost, fit_cost
from automil.tune.schedule.budget import (
    EDGE_WEIGHT,
    FINAL_SHARE,
    FIRST_TRIES,
    GROWTH_RANGE,
    LOG_SECONDS,
    MIN_MARGIN,
    RESERVE_MARGIN,
    LearnerState,
    StudyState,
    contenders,
    estimated_trial_seconds,
    final_fits,
    final_reserve,
    first_cost,
    fits_deadline,
    learner_state,
    next_step,
    run_seconds,
    standing,
    trial_stop,
    tuning_deadline,
)
from automil.tune.schedule.ladder import GROWTH_MIN_SECONDS, RungState
from automil.tune.schedule.probe import (
    ANYTIME_REACH,
    PRIOR_TOLERANCE,
    PROBE_CELLS,
    PROBE_SHARE,
    PROBE_TOLERANCE,
    bag_pairs,
    beyond_prior,
    called_promising,
    cost_unknown,
    over_share,
    predicted_trial_seconds,
    probe_limits,
    share_allowed,
    worth_probing,
)
from automil.tune.studies.plan import Plan

SIX_BAGS = RunFolds("d", tuple("abcdef"), np.zeros(6, dtype=int), ())  # a plan's folds, never read here


def learner(name, best=None, trials=1, seconds=0.0, stderr=0.0, splits=0, expected=None, too_slow=False,
            predicted=None):
    main = StudyState(trials=trials if best is not None else 0, best=best, stderr=stderr)
    return LearnerState(name, (main, *[StudyState() for _ in range(splits)]), seconds=seconds,
                        expected_seconds=expected, too_slow=too_slow, predicted_seconds=predicted)


def test_defaults_run_first_cheapest_first_with_a_fair_share():
    states = [learner("slow", expected=5.0), learner("unknown"), learner("cheap", expected=1.0)]
    step = next_step(states, n_trials=20, time_left=90.0, jobs=2)
    assert (step.learner, step.study, step.phase) == ("cheap", 0, "defaults")
    assert step.time_limit == pytest.approx(90.0 * 2 / 3)
    # once it has a trial, the next known-cost learner, and the unknown one last
    states[2] = learner("cheap", best=0.8, expected=1.0)
    assert next_step(states, 20, 60.0).learner == "slow"
    states[0] = learner("slow", best=0.7, expected=5.0)
    step = next_step(states, 20, 30.0)
    assert step.learner == "unknown" and step.time_limit == pytest.approx(30.0)


def test_defaults_of_unmeasured_learners_run_cheapest_first_by_their_shipped_fit_costs():
    states = [learner("a-costly", predicted=300.0), learner("b-unknown"), learner("c-cheap", predicted=2.0),
              learner("d-measured", expected=50.0, predicted=1.0)]
    # a measured cost stands before a prediction; the unknown learner last
    order = []
    for _ in states:
        step = next_step(states, n_trials=20, time_left=600.0)
        order.append(step.learner)
        states = [replace(s, studies=(StudyState(1, 0.7),)) if s.name == step.learner else s for s in states]
    assert order == ["c-cheap", "d-measured", "a-costly", "b-unknown"]
    # the step carries the cost it was ordered by, for the trial to weigh against its share
    first = next_step([learner("c-cheap", predicted=2.0), learner("d-measured", expected=50.0)], 20, 600.0)
    assert (first.learner, first.estimate) == ("c-cheap", 2.0)
    assert next_step([learner("b-unknown")], 20, 600.0).estimate is None
    # on the ladder, the cost its rungs measured on this data stands before the shipped prediction
    climbed = replace(learner("e-climbed", predicted=1.0), rungs=(RungState(1 / 16, 0.7, 1.0),
                                                                   RungState(1 / 4, 0.7, 4.0)))
    assert first_cost(climbed, ladder=(1 / 16, 1 / 4)) == pytest.approx(16.0)
    assert first_cost(climbed, ladder=()) == 1.0


def test_defaults_wait_for_no_learner_stopped_as_too_slow():
    states = [learner("a", best=0.8), learner("b", too_slow=True)]
    step = next_step(states, 20, 100.0)
    assert step.phase == "promise" and step.learner == "a"


def test_a_learner_whose_defaults_completed_nothing_gets_one_more_try_then_waits():
    failed = LearnerState("failed", (StudyState(trials=1),))
    states = [learner("ok", best=0.8), failed]
    assert next_step(states, 20, 100.0).learner == "failed"
    states[1] = LearnerState("failed", (StudyState(trials=FIRST_TRIES),))
    step = next_step(states, 20, 100.0)
    assert step.learner == "ok" and step.phase == "promise"


def test_a_first_trial_running_in_another_process_is_not_run_twice():
    # two processes start together: the second takes the portfolio's next member, not a copy of the first's
    running = LearnerState("first", (StudyState(trials=1, running=1),))
    states = [running, learner("second", best=None)]
    assert next_step(states, 20, 100.0, jobs=2, prior=("first", "second")).learner == "second"
    # once that trial has ended without a score, the learner gets its second try
    states[0] = LearnerState("first", (StudyState(trials=1),))
    assert next_step(states, 20, 100.0, jobs=2, prior=("first", "second")).learner == "first"


def test_no_trial_starts_that_its_learners_measured_seconds_say_the_deadline_would_cut():
    # 60 s left: the leader's trials take 90 s, so its next goes to the rival's 20 s ones; a second try of
    # defaults that completed nothing in 110 s waits too, as does a portfolio member's
    states = [learner("leader", best=0.90, expected=90.0), learner("rival", best=0.89, expected=20.0),
              LearnerState("retry", (StudyState(trials=1),), expected_seconds=110.0)]
    assert next_step(states, 20, 60.0).learner == "rival"
    assert next_step(states, 20, 60.0, prior=("retry",)).learner == "rival"
    assert next_step(states, 20, 120.0).learner == "retry", "with the time to end it, the second try first"
    assert next_step(states[:1], 20, 60.0) is None, "nothing that ends: no trial"
    assert next_step([learner("new")], 20, 1.0).phase == "defaults", "a cost not yet measured may try"


def test_only_learners_within_the_margin_of_the_leader_contend():
    states = [learner("leader", best=0.90, stderr=0.02), learner("close", best=0.87),
              learner("edge", best=0.86), learner("behind", best=0.80)]
    weights = contenders(states, n_trials=20)
    assert set(weights) == {"leader", "close", "edge"}  # margin 2 x 0.02 = 0.04
    assert weights["leader"] == pytest.approx(1.0)
    assert weights["edge"] == pytest.approx(EDGE_WEIGHT)
    assert weights["leader"] > weights["close"] > weights["edge"]


def test_the_margin_is_never_below_its_minimum():
    states = [learner("leader", best=0.90, stderr=0.0), learner("a", best=0.90 - MIN_MARGIN / 2),
              learner("b", best=0.90 - 2 * MIN_MARGIN)]
    assert set(contenders(states, 20)) == {"leader", "a"}


def test_seconds_not_trials_are_shared_in_proportion_to_weight():
    """Run the policy with trials of different costs: each contender's seconds follow its weight."""
    cost = {"leader": 1.0, "slow-rival": 3.0, "behind": 0.1}
    states = {s.name: s for s in [learner("leader", best=0.90, stderr=0.02), learner("slow-rival", best=0.88),
                                  learner("behind", best=0.70)]}
    weights = contenders(list(states.values()), None)
    trials = dict.fromkeys(cost, 0)
    for _ in range(400):
        step = next_step(list(states.values()), None, None)
        s = states[step.learner]
        states[step.learner] = replace(s, seconds=s.seconds + cost[s.name])
        trials[s.name] += 1
    ratio = states["leader"].seconds / states["slow-rival"].seconds
    assert ratio == pytest.approx(weights["leader"] / weights["slow-rival"], rel=0.05)
    assert trials["behind"] == 0
    assert trials["leader"] > trials["slow-rival"]


def test_a_learner_fills_its_studies_evenly_the_study_on_all_folds_first():
    s = LearnerState("a", (StudyState(2, 0.9), StudyState(1, 0.8), StudyState(0), StudyState(1, 0.7)))
    assert next_step([s], 20, 100.0).study == 2
    even = LearnerState("a", (StudyState(1, 0.9), StudyState(1, 0.8)))
    assert next_step([even], 20, 100.0).study == 0


def test_full_studies_take_no_trial_and_the_next_best_learners_get_the_time():
    full = LearnerState("leader", (StudyState(3, 0.95), StudyState(3, 0.9)))
    states = [full, learner("second", best=0.80), learner("third", best=0.60)]
    step = next_step(states, n_trials=3, time_left=100.0)
    assert step.learner == "second"  # the leader is full: the margin is measured from the best open learner
    assert "third" not in contenders(states, 3)
    everything_full = [full, LearnerState("second", (StudyState(3, 0.8), StudyState(3, 0.7)))]
    assert next_step(everything_full, 3, 100.0) is None


def test_learners_without_a_score_share_the_time_the_scored_ones_leave():
    full = LearnerState("scored", (StudyState(3, 0.9),))
    failing = LearnerState("failing", (StudyState(FIRST_TRIES),), seconds=5.0)
    starved = LearnerState("starved", (StudyState(FIRST_TRIES),), seconds=1.0)
    slow = LearnerState("slow", (StudyState(0),), too_slow=True)
    step = next_step([full, failing, starved, slow], n_trials=3, time_left=None)
    assert (step.learner, step.phase) == ("starved", "rest")
    done = [full, LearnerState("failing", (StudyState(3),)), slow]
    assert next_step(done, 3, None) is None


def test_the_three_best_hold_most_trials_on_a_simulated_run():
    """Twelve learners with made-up costs and scores; a trial may improve its learner's best a little.
    After every default has run, the three best learners get at least half of all trials."""
    rng = np.random.default_rng(0)
    names = [f"l{i}" for i in range(12)]
    quality = dict(zip(names, rng.uniform(0.55, 0.9, 12)))
    cost = dict(zip(names, rng.uniform(0.2, 3.0, 12)))
    states = {n: learner(n, expected=None) for n in names}
    trials = dict.fromkeys(names, 0)
    time_left = 300.0
    while time_left > 0:
        step = next_step(list(states.values()), None, time_left)
        s = states[step.learner]
        best = max(s.main.best or 0.0, quality[s.name] - abs(rng.normal(0, 0.03)))
        main = StudyState(s.main.trials + 1, best, stderr=0.015)
        states[s.name] = replace(s, studies=(main,), seconds=s.seconds + cost[s.name])
        trials[s.name] += 1
        time_left -= cost[s.name]
    top3 = sorted(names, key=lambda n: -states[n].main.best)[:3]
    assert sum(trials[n] for n in top3) >= sum(trials.values()) / 2
    assert all(t >= 1 for t in trials.values())  # every learner's defaults ran


def test_learner_state_reads_counts_best_spread_seconds_and_too_slow_from_trial_records():
    t0 = datetime(2026, 12, 1, 12, 0, 0)

    def trial(number, state, value=None, seconds=2.0, **attrs):
        return TrialRecord(number, state, value, attrs=attrs, start=t0 + timedelta(seconds=10 * number),
                           end=None if state is TrialState.RUNNING else t0 + timedelta(seconds=10 * number + seconds))

    folds = [0.8, 0.9, 1.0]
    main = [trial(0, TrialState.COMPLETE, 0.9, fold_balanced_accuracy=folds),
            trial(1, TrialState.COMPLETE, 0.7, fold_balanced_accuracy=[0.7] * 3),
            trial(2, TrialState.FAIL, seconds=4.0, interrupted=True, too_slow=True, error="too slow")]
    split = [trial(0, TrialState.COMPLETE, 0.8, seconds=1.0)]
    state = learner_state("a", [main, split], "balanced_accuracy", run_start=t0.timestamp(),
                          now=(t0 + timedelta(minutes=1)).timestamp())
    assert [s.trials for s in state.studies] == [2, 1]  # the interrupted trial does not count
    assert state.main.best == 0.9 and state.studies[1].best == 0.8
    assert state.main.stderr == pytest.approx(np.std(folds, ddof=1) / np.sqrt(3))
    assert state.seconds == pytest.approx(2 + 2 + 4 + 1)
    assert state.expected_seconds == pytest.approx((2 + 2 + 4) / 3)
    assert state.too_slow
    later = learner_state("a", [main, split], "balanced_accuracy", run_start=t0.timestamp() + 3600,
                          now=t0.timestamp() + 7200)
    assert not later.too_slow  # stopped in an earlier run: a new run tries its defaults again


def test_the_equal_allocation_gives_every_learner_with_a_score_the_same_seconds():
    states = {s.name: s for s in [learner("leader", best=0.90, stderr=0.01), learner("behind", best=0.60)]}
    cost = {"leader": 1.0, "behind": 0.5}
    for _ in range(100):
        step = next_step(list(states.values()), None, None, equal=True)
        s = states[step.learner]
        states[step.learner] = replace(s, seconds=s.seconds + cost[s.name])
    assert states["behind"].seconds == pytest.approx(states["leader"].seconds, abs=1.0)


def test_under_the_equal_allocation_no_learner_with_a_score_is_shown_behind():
    states = [learner("leader", best=0.90, stderr=0.01), learner("far", best=0.60)]
    phases = {}
    for allocation in ("promise", "equal"):
        options = TuneOptions(allocation=allocation, protocol="nested")
        plan = Plan("d", ["leader", "far"], options, np.zeros(6, dtype=int), start=0.0)
        phases[allocation] = {row.learner: row.phase for row in standing(states, plan, None, 1.0, None).learners}
    assert phases["promise"] == {"leader": "contender", "far": "behind"}
    assert phases["equal"] == {"leader": "contender", "far": "contender"}


def test_the_final_evaluation_keeps_the_measured_cost_of_the_headline_refits_and_models():
    states = [learner("a", best=0.8, expected=6.0), learner("b", best=0.7, expected=12.0),
              learner("unmeasured", expected=None), learner("no score", expected=30.0)]
    # a trial's worth of refits (6 folds) and one model fit per scored learner, shared by 2 workers
    assert final_reserve(states, folds=6, jobs=2) == pytest.approx(RESERVE_MARGIN * (6.0 + 12.0) * (7 / 6) / 2)
    # one costly learner: its hold-out refit and then its model run one after the other, whatever the workers
    assert final_reserve(states[1:], folds=4, jobs=2, protocol="holdout") == pytest.approx(
        RESERVE_MARGIN * 12.0 * final_fits(4, "holdout"))
    assert final_reserve(states[1:], folds=6, jobs=2) == pytest.approx(RESERVE_MARGIN * 12.0 * (1 / 2 + 1 / 6))
    assert final_reserve(states[2:], folds=6) == 0.0
    # and the time to log every result, which the final evaluation's fits leave before the budget ends
    assert final_reserve(states[2:], folds=6, results=25) == pytest.approx(25 * LOG_SECONDS)
    assert final_reserve(states, folds=6, jobs=2, results=25) == pytest.approx(
        25 * LOG_SECONDS + RESERVE_MARGIN * (6.0 + 12.0) * (7 / 6) / 2)
    plan = Plan("d", ["a", "b"], TuneOptions(timeout=400.0, protocol="nested"), SIX_BAGS, start=1000.0)
    low, high = FINAL_SHARE
    assert tuning_deadline(plan, 0.0) == pytest.approx(1000.0 + 400.0 * (1 - low))  # room for repeats
    assert tuning_deadline(plan, 130.0) == pytest.approx(1000.0 + 400.0 - 130.0)
    assert tuning_deadline(plan, 1e6) == pytest.approx(1000.0 + 400.0 * (1 - high))  # tuning keeps its part
    assert tuning_deadline(Plan("d", [], TuneOptions(timeout=None, protocol="nested"), SIX_BAGS, 0.0), 50.0) is None


def test_the_final_evaluations_fits_leave_the_time_to_log_every_result_before_the_budget_ends():
    plan = Plan("d", ["a", "b"], TuneOptions(timeout=400.0, protocol="nested"), SIX_BAGS, start=1000.0)
    assert fits_deadline(plan, results=25, tracked=True) == pytest.approx(1400.0 - 25 * LOG_SECONDS)
    assert fits_deadline(plan, results=25, tracked=False) == pytest.approx(1400.0)  # nothing to log
    unbounded = Plan("d", [], TuneOptions(timeout=None, protocol="nested"), SIX_BAGS, 0.0)
    assert fits_deadline(unbounded, results=25, tracked=True) == float("inf")


def test_the_fits_before_the_choice_leave_the_time_to_fit_the_leading_learners_model():
    # the run ends with its chosen model's fit, which no deadline stops: the refits before the choice leave
    # the full-data fit of the learner whose tuning score leads, at its best trial's pace, on all 6 bags
    folds = RunFolds("d", tuple("abcdef"), np.array([0, 1, 0, 1, 0, 1]), ())  # a trial's fits train on 3 bags
    plan = Plan("d", ["fast", "slow"], TuneOptions(timeout=400.0, protocol="nested"), folds, start=1000.0)

    def trial(score, seconds):
        return TrialRecord(0, TrialState.COMPLETE, score, attrs={"balanced_accuracy": score, "fit_seconds": seconds})

    candidates = {"fast": Candidate([trial(0.7, [1.0, 3.0])], []), "slow": Candidate([trial(0.9, [30.0])], []),
                  "none": Candidate([], [])}
    assert leader_model_seconds(plan, candidates, n_bags=6) == pytest.approx(30.0 * 6 / 3)
    candidates["slow"] = Candidate([trial(0.6, [30.0])], [])  # behind: the leader is the fast one
    assert leader_model_seconds(plan, candidates, n_bags=6) == pytest.approx(2.0 * 6 / 3)
    assert leader_model_seconds(plan, {"none": Candidate([], [])}, n_bags=6) == 0.0
    assert fits_deadline(plan, results=25, tracked=True, model_seconds=4.0) == \
        pytest.approx(1400.0 - 25 * LOG_SECONDS - RESERVE_MARGIN * 4.0)
    assert fits_deadline(plan, results=25, tracked=False, model_seconds=4.0) == pytest.approx(1400.0)  # no model
    held_out = Plan("d", ["fast"], TuneOptions(timeout=400.0, protocol="holdout"), folds, start=1000.0)
    # under the hold-out protocol a model that would end late is the hold-out refit: the refits leave nothing
    assert fits_deadline(held_out, results=25, tracked=True, model_seconds=4.0) == \
        pytest.approx(1400.0 - 25 * LOG_SECONDS)


def test_the_cost_estimate_extrapolates_the_measured_growth_to_every_fit_of_the_trial():
    # 1 s on 1000 instances, 4 s on 2000: quadratic; 5 fits on 8000 instances each take 4 * 4^2 s
    assert estimated_trial_seconds([1000, 2000], [1.0, 4.0], 8000, fits=5) == pytest.approx(5 * 64.0)
    # a declared growth is used as it is, whatever the samples measured
    assert estimated_trial_seconds([1000, 2000], [1.0, 4.0], 8000, fits=5, growth=1.0) == pytest.approx(5 * 16.0)


def test_a_measured_growth_stays_within_its_range():
    # the same time on both samples (start-up cost only): never less than linear
    low = estimated_trial_seconds([1000, 2000], [1.0, 1.0], 8000, fits=1)
    assert low == pytest.approx(4.0 ** GROWTH_RANGE[0])
    # noise that looks like a power of 5: never more than the range's top
    high = estimated_trial_seconds([1000, 2000], [1.0, 32.0], 8000, fits=1)
    assert high == pytest.approx(32.0 * 4.0 ** GROWTH_RANGE[1])
    # a single sample (the other stopped) extrapolates linearly
    assert estimated_trial_seconds([1000], [3.0], 8000, fits=2) == pytest.approx(2 * 24.0)


def test_fits_too_short_to_time_are_extrapolated_linearly_not_by_their_noise():
    # a fast learner's two sample fits, the second delayed by a loaded machine: no growth is read from them
    short = GROWTH_MIN_SECONDS / 4
    assert estimated_trial_seconds([1000, 2000], [short, 8 * short], 8000, fits=1) == pytest.approx(8 * short * 4)
    # from the resolution up, the growth is measured (here quadratic)
    timed = GROWTH_MIN_SECONDS
    assert estimated_trial_seconds([1000, 2000], [timed, 4 * timed], 8000, fits=1) == pytest.approx(4 * timed * 16)


def test_only_large_data_under_a_fair_share_is_probed_and_the_probe_keeps_to_its_part_of_the_share():
    assert worth_probing(PROBE_CELLS, share=50.0)
    assert not worth_probing(PROBE_CELLS - 1, share=50.0)  # small data: a fit costs seconds anyway
    assert not worth_probing(10 * PROBE_CELLS, share=None)  # no fair share: nothing to save
    warm_up, *limits = probe_limits(60.0)
    assert warm_up == pytest.approx(PROBE_SHARE * 60.0)  # one-time costs: imports, compilation
    assert sum(limits) == pytest.approx(PROBE_SHARE * 60.0)
    assert limits[0] < limits[1]  # the larger sample may take longer


def test_run_seconds_add_up_the_trials_of_every_study_that_started_in_this_run():
    t0 = datetime(2026, 12, 1, 12, 0, 0)

    def trial(number, start, seconds):
        return TrialRecord(number, TrialState.COMPLETE, 0.5, start=t0 + timedelta(seconds=start),
                           end=t0 + timedelta(seconds=start + seconds))

    earlier_run = trial(0, -100, 30.0)
    main = [earlier_run, trial(1, 10, 2.0), trial(2, 20, 3.5)]
    split = [trial(0, 15, 1.0), TrialRecord(1, TrialState.RUNNING, start=t0 + timedelta(seconds=40))]
    assert run_seconds([main, split], run_start=t0.timestamp(), now=t0.timestamp() + 45) == pytest.approx(
        2.0 + 3.5 + 1.0 + 5.0)


def test_a_plan_refuses_a_protocol_not_yet_decided_on_its_bags():
    with pytest.raises(ValueError, match="protocol decided on its bags"):
        Plan("d", ["a"], TuneOptions(), SIX_BAGS, 0.0)


def test_a_trial_stops_at_its_share_when_the_share_ends_first_else_at_the_deadline():
    assert trial_stop(100.0, 30.0, 200.0) == (130.0, True)  # its own share: passing it is too slow
    assert trial_stop(100.0, 150.0, 200.0) == (200.0, False)  # the run's budget cuts it
    assert trial_stop(100.0, None, 200.0) == (200.0, False)  # no share: the deadline alone
    assert trial_stop(100.0, None, np.inf) == (np.inf, False)  # no --timeout


def test_a_learner_sent_to_all_the_bags_without_a_rung_is_probed_first_unless_the_portfolio_calls_it():
    ladder, prior = (1 / 16, 1 / 4), ("member",)
    rung = TrialRecord(0, TrialState.FAIL, None, attrs={"rung": 1 / 16})
    stopped = TrialRecord(2, TrialState.FAIL, None, attrs={"rung": 1 / 4, "error": "too slow for the budget: ..."})
    counted = TrialRecord(1, TrialState.COMPLETE, 0.7)
    # a flat ladder sends a learner straight to all the bags: its first trial there knows nothing of its cost
    assert cost_unknown("other", [], None, ladder, prior)
    # a rung's trial measured it, or an earlier trial on all the bags did
    assert not cost_unknown("other", [rung], None, ladder, prior)
    assert not cost_unknown("other", [counted], None, ladder, prior)
    # a rung's trial stopped at its limit measured no cost to go on
    assert cost_unknown("other", [stopped], None, ladder, prior)
    # the portfolio's members spend their share; a rung's own trial is never probed
    assert not cost_unknown("member", [], None, ladder, prior)
    assert not cost_unknown("other", [], 1 / 16, ladder, prior)
    # without a ladder (nested and tuned protocols) every trial on all the bags is probed, members too
    assert cost_unknown("member", [counted], None, (), prior)


def test_a_probe_stops_a_learner_only_when_its_estimate_passes_the_share_by_more_than_the_probes_error():
    assert not over_share(100.0, 100.0)
    assert not over_share(PROBE_TOLERANCE * 100.0, 100.0)  # within the probe's measured overestimate
    assert over_share(PROBE_TOLERANCE * 100.0 + 1.0, 100.0)
    # a learner the portfolio passed over is not given the estimate's doubt
    assert not over_share(100.0, 100.0, promising=False)
    assert over_share(101.0, 100.0, promising=False)


def test_the_portfolio_a_passed_rung_or_a_run_without_a_prior_calls_a_learner_promising():
    prior = ("member",)
    rung = TrialRecord(0, TrialState.FAIL, None, attrs={"rung": 1 / 4})
    stopped = TrialRecord(1, TrialState.FAIL, None, attrs={"rung": 1 / 4, "error": "too slow for the budget: ..."})
    assert called_promising("member", [], prior)
    assert not called_promising("other", [], prior)
    assert called_promising("other", [rung], prior)  # its rung scored and it went on to all the bags
    assert not called_promising("other", [stopped], prior)  # a rung stopped at its limit says nothing
    assert called_promising("other", [], ())  # no portfolio names a learner of the run: no prior to go by


def test_a_shipped_fit_cost_is_extrapolated_in_instance_values_to_every_fit_of_the_trial():
    cost = FitCost(instances=4000, seconds=16.0, n_features=64, pairs=4000 * 80)
    # linear; 3 fits on 8000 instances of 128 features: 4 times the values of 4000 x 64
    assert predicted_trial_seconds(cost, None, [np.full(100, 80)] * 3, 128) == pytest.approx(3 * 16.0 * 4)
    # a declared growth is used as it is
    assert predicted_trial_seconds(cost, 2.0, [np.full(100, 80)], 128) == pytest.approx(16.0 * 16)
    assert "16.0 s a fit of its defaults on 4,000 instances of 64 features" in cost.describe()


def test_a_pairwise_learners_cost_grows_with_its_bags_instance_pairs():
    cost = FitCost(instances=4000, seconds=16.0, n_features=64, pairs=4000 * 80)  # 50 bags of 80
    larger_bags = [np.full(20, 200)]  # as many instances (4,000), bags 2.5 times as large
    assert bag_pairs(larger_bags[0]) == 20 * 200 * 200
    assert predicted_trial_seconds(cost, None, larger_bags, 64) == pytest.approx(16.0)
    assert predicted_trial_seconds(cost, None, larger_bags, 64, pairwise=True) == pytest.approx(16.0 * 2.5)


def test_every_built_in_learner_has_a_shipped_fit_cost_but_a_timed_out_one_and_a_third_party_one_none():
    import json
    from importlib import resources

    from automil import plugins

    table = json.loads(resources.files("automil.tune.portfolio").joinpath("fit_costs.json").read_text())
    built_in = [s.name for s in plugins.learners().values() if s.plugin in plugins.BUILTIN_PLUGINS]
    timed_out = {name for name, entry in table["learners"].items() if entry["timed_out"]}
    assert built_in and timed_out and all((fit_cost(name) is None) == (name in timed_out) for name in built_in)
    assert fit_cost("embedded-meanmax") is None  # the plugin template's: a third party's learner


def test_a_prediction_keeps_a_learner_from_a_share_only_beyond_its_own_error():
    assert not beyond_prior(PRIOR_TOLERANCE * 10.0, 10.0, anytime=False)
    assert beyond_prior(PRIOR_TOLERANCE * 10.0 + 1.0, 10.0, anytime=False)
    # an anytime learner ends in any share: kept out only where the share holds under ANYTIME_REACH of its work
    assert not beyond_prior(10.0 / ANYTIME_REACH, 10.0, anytime=True)
    assert beyond_prior(10.0 / ANYTIME_REACH + 1.0, 10.0, anytime=True)


def test_a_trial_estimated_just_over_its_share_may_run_to_the_estimates_error_bound():
    assert share_allowed(80.0, 100.0) == 100.0  # ends within its share: the share stops it, as before
    assert share_allowed(100.0, 100.0) == 100.0
    # estimated 20% over: stopped at its share, all its seconds would buy nothing
    assert share_allowed(120.0, 100.0) == PROBE_TOLERANCE * 100.0
    assert share_allowed(PROBE_TOLERANCE * 100.0, 100.0) == PROBE_TOLERANCE * 100.0
    # a learner the portfolio passed over gets its share and no more
    assert share_allowed(120.0, 100.0, promising=False) == 100.0


def test_the_headline_refits_run_the_longest_first_by_their_trials_fit_seconds():
    folds = RunFolds("d", tuple("abcdef"), np.array([0, 1, 0, 1, 0, 1]), ())
    plan = Plan("d", ["fast", "slow"], TuneOptions(protocol="nested"), folds, start=0.0)

    def trial(seconds):
        return TrialRecord(0, TrialState.COMPLETE, 0.8, attrs={"estimator_params": {}, "fit_seconds": seconds})

    tasks = nested_tasks(plan, {"fast": [trial([1.0, 3.0]), trial([2.5])], "slow": [trial([30.0]), None],
                                "instant": [trial([0.2]), trial([0.9])]})
    assert [(t.learner, t.index, t.seconds) for t in tasks] == \
        [("fast", 0, 2.0), ("fast", 1, 2.5), ("slow", 0, 30.0), ("instant", 0, 0.2), ("instant", 1, 0.9)]
    # the long refit first; those of the same whole seconds keep their order
    assert [(t.learner, t.index) for t in longest_first(tasks)] == \
        [("slow", 0), ("fast", 0), ("fast", 1), ("instant", 0), ("instant", 1)]
