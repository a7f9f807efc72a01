"""The portfolio: greedy selection on a made-up matrix, its leave-one-task-out regret, the regime of a data set,
the points a learner's studies start from, and the order the budget runs the portfolio's learners in."""

import numpy as np
import pytest

from automil.tune.portfolio.members import REGIMES, Member, grouped, members_for, regime_of
from automil.tune.portfolio.selection import greedy_portfolio, leave_one_task_out, normalized
from automil.tune.schedule.budget import LearnerState, StudyState, next_step
from automil.tune.schedule.ladder import LADDER
from automil.tune.studies.priors import first_point, later_points

pytestmark = pytest.mark.unit

# Four tasks x four configurations: 0 is good on the first two tasks, 1 on the last two, 2 is a fair
# compromise everywhere, 3 never lifts above chance.
SCORES = np.array([[0.90, 0.55, 0.80, 0.5],
                   [0.88, 0.52, 0.79, 0.5],
                   [0.55, 0.92, 0.81, 0.5],
                   [0.51, 0.90, 0.78, 0.5]])
SECONDS = np.array([[1.0, 2.0, 3.0, 0.1]] * 4)


def test_normalized_scores_run_from_chance_to_the_tasks_best_and_drop_tasks_at_chance():
    scores = np.vstack([SCORES, [0.5, 0.49, np.nan, 0.5]])
    norm = normalized(scores)
    assert norm.shape == (4, 4)  # the task nothing lifts above chance says nothing
    assert np.allclose(norm.max(axis=1), 1.0) and norm.min() >= 0.0
    assert norm[0, 3] == 0.0


def test_greedy_selection_takes_the_compromise_first_then_what_complements_it():
    # alone, the compromise has the best mean; then the two specialists each add their half
    chosen = greedy_portfolio(SCORES, SECONDS, size=4)
    assert chosen[0] == 2
    assert set(chosen[1:3]) == {0, 1}
    assert 3 not in chosen  # it adds nothing: the selection stops before it


def test_greedy_selection_breaks_ties_by_seconds_and_respects_the_size():
    scores = np.array([[0.9, 0.9], [0.8, 0.8]])
    assert greedy_portfolio(scores, np.array([[5.0, 1.0]] * 2), size=1) == [1]
    assert greedy_portfolio(SCORES, SECONDS, size=1) == [2]


def test_missing_or_failed_cells_count_as_chance():
    scores = SCORES.copy()
    scores[:, 2] = np.nan  # the compromise failed everywhere
    assert 2 not in greedy_portfolio(scores, SECONDS, size=4)


def test_leave_one_task_out_regret_of_the_portfolio_is_at_most_the_best_single_defaults():
    table = leave_one_task_out(SCORES, SECONDS, size=3, defaults={"a": 0, "b": 1, "c": 2})
    assert table["every learner's defaults"][0] == pytest.approx(0.0)
    assert table["portfolio"][0] <= table["best defaults"][0]
    # learner a alone: best on the first two tasks, far below on the others
    assert table["a"][0] == pytest.approx(np.mean([0.0, 0.0, 0.92 - 0.55, 0.90 - 0.51]))
    assert table["portfolio"][1] > 0.0


def test_regimes_split_by_mean_bag_size_and_large_bags_in_groups_apart():
    assert [regime_of({"mean_bag_size": s}) for s in (5.2, 31.9, 32.0, 1500.0)] == [
        "small bags", "small bags", "large bags", "large bags"]
    assert regime_of({"mean_bag_size": 150.0, "grouped": True}) == "slides by patient"
    assert regime_of({"mean_bag_size": 6.0, "grouped": True}) == "small bags"  # no grouped regime of small bags
    assert len({r.name for r in REGIMES}) == len(REGIMES)


def test_bags_are_grouped_when_a_group_holds_several_of_them():
    from automil import Bags

    bags = Bags.from_list([np.zeros((2, 3))] * 4, [0, 1, 0, 1])
    assert not grouped(bags)
    assert not grouped(Bags(bags.X, bags.offsets, bags.y, groups=["a", "b", "c", "d"]))  # one bag a patient
    assert grouped(Bags(bags.X, bags.offsets, bags.y, groups=["a", "a", "b", "c"]))


def test_a_portfolio_without_a_grouped_regime_serves_grouped_bags_that_of_their_size(tmp_path):
    import json

    path = tmp_path / "portfolio.json"
    path.write_text(json.dumps({"regimes": [{"name": "large bags", "members": [
        {"learner": "sil", "params": {"C": 1.0}}]}]}))
    members = members_for({"mean_bag_size": 100.0, "grouped": True}, ["sil"], str(path))
    assert members == (Member("sil", {"C": 1.0}),)


def test_grouped_bags_without_their_regimes_learners_get_those_of_their_size(tmp_path):
    import json

    path = tmp_path / "portfolio.json"
    path.write_text(json.dumps({"regimes": [
        {"name": "large bags", "members": [{"learner": "sil", "params": {"C": 1.0}}]},
        {"name": "slides by patient", "members": [{"learner": "abmil", "params": {"gated": True}}]}]}))
    grouped_bags = {"mean_bag_size": 100.0, "grouped": True}
    assert members_for(grouped_bags, ["sil", "abmil"], str(path)) == (Member("abmil", {"gated": True}),)
    assert members_for(grouped_bags, ["sil"], str(path)) == (Member("sil", {"C": 1.0}),)  # e.g. without torch
    assert members_for(grouped_bags, ["nsk"], str(path)) == ()


def test_the_shipped_portfolio_names_registered_learners_and_points_of_their_spaces():
    from automil import plugins
    from automil.checks import _new_trial  # the contract suite's trial on given parameters

    learners = plugins.learners()
    for size, in_groups in ((6.0, False), (150.0, False), (150.0, True)):
        members = members_for({"mean_bag_size": size, "grouped": in_groups}, learners)
        assert members, f"no portfolio for bags of {size} instances (grouped: {in_groups})"
        for member in members:
            spec = learners[member.learner]
            trial = _new_trial(None, 16, enqueue=first_point(spec, [member]))
            spec.search_space(trial)
            assert trial.params == first_point(spec, [member])


class _Spec:
    def __init__(self, name, first_trial):
        self.name, self.first_trial = name, first_trial


def test_a_learner_starts_from_its_first_portfolio_point_then_its_others_then_its_defaults():
    spec = _Spec("svm", {"C": 1.0, "kernel": "linear"})
    members = [Member("svm", {"C": 10.0}), Member("forest", {"n": 5}), Member("svm", {"kernel": "rbf"})]
    assert first_point(spec, members) == {"C": 10.0}
    assert later_points(spec, members) == [{"kernel": "rbf"}, {"C": 1.0, "kernel": "linear"}]
    assert first_point(spec, []) == spec.first_trial and later_points(spec, []) == []
    # the defaults among the portfolio's points are not tried twice
    assert later_points(spec, [Member("svm", {"C": 1.0, "kernel": "linear"})]) == []


def _state(name, best=None, expected=None):
    main = StudyState(trials=0 if best is None else 1, best=best)
    return LearnerState(name, (main,), expected_seconds=expected)


def test_the_portfolios_learners_run_first_in_its_order_with_the_time_shared_among_them():
    states = [_state("cheap", expected=1.0), _state("second"), _state("first", expected=50.0)]
    step = next_step(states, 20, time_left=100.0, jobs=1, prior=("first", "second"))
    assert (step.learner, step.phase) == ("first", "defaults")
    assert step.time_limit == pytest.approx(100.0 / 2)  # shared among the portfolio's two learners only
    states[2] = _state("first", best=0.8, expected=50.0)
    assert next_step(states, 20, 60.0, prior=("first", "second")).learner == "second"
    states[1] = _state("second", best=0.7)
    step = next_step(states, 20, 30.0, prior=("first", "second"))
    assert step.learner == "cheap" and step.time_limit == pytest.approx(30.0)  # then the others' defaults


def test_the_portfolios_learners_skip_the_ladder():
    states = [_state("member"), _state("other")]
    step = next_step(states, 20, 100.0, ladder=LADDER, prior=("member",))
    assert (step.learner, step.fraction) == ("member", None)
    states[0] = _state("member", best=0.6, expected=3.0)
    step = next_step(states, 20, 100.0, ladder=LADDER, prior=("member",))
    assert (step.learner, step.phase, step.fraction) == ("other", "rung", LADDER[0])


def test_the_progress_shows_a_waiting_portfolio_learner_at_its_portfolio_point_not_screening():
    from automil.tune.options import TuneOptions
    from automil.tune.schedule.budget import standing
    from automil.tune.studies.plan import Plan

    plan = Plan("d", ["member", "other"], TuneOptions(protocol="holdout"), np.zeros(8, dtype=int), start=0.0,
                portfolio=(Member("member", {}),))
    phases = {row.learner: row.phase for row in standing([_state("member"), _state("other")], plan, None, 1.0,
                                                         None).learners}
    assert phases == {"member": "portfolio", "other": "screening"}
