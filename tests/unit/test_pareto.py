"""Accuracy against cost on made-up points: the non-dominated filter, the cheapest point near the best,
the best trial of a multi-objective study, the options that ask for one, and the front of a row."""

import itertools

import numpy as np
import pytest

from automil.evaluation.pareto import cheapest_near_best, non_dominated
from automil.records import ParetoPoint, TrialRecord, TrialState
from automil.tune.backend.optuna_trials import best_trial
from automil.tune.final.leaderboard import pareto_front
from automil.tune.options import OBJECTIVES, TuneOptions

MAX_MIN = [True, False]  # (accuracy: larger is better, seconds: smaller is better)


def _dominates(a, b, maximize):
    sign = np.where(maximize, 1.0, -1.0)
    a, b = np.asarray(a) * sign, np.asarray(b) * sign
    return bool((a >= b).all() and (a > b).any())


def test_one_point_is_its_own_front():
    assert non_dominated([[0.7, 3.0]], MAX_MIN).tolist() == [0]


def test_all_dominated_but_one_leaves_that_one():
    points = [[0.60, 5.0], [0.90, 1.0], [0.80, 2.0], [0.90, 1.5], [0.50, 1.0]]
    assert non_dominated(points, MAX_MIN).tolist() == [1]


def test_duplicates_are_all_kept_and_a_tie_on_one_objective_goes_to_the_better_other():
    points = [[0.8, 2.0], [0.8, 2.0], [0.8, 3.0], [0.9, 4.0], [0.7, 1.0]]
    # the duplicates dominate neither each other; (0.8, 3 s) is beaten by the same accuracy in 2 s
    assert non_dominated(points, MAX_MIN).tolist() == [0, 1, 3, 4]


def test_the_front_is_exactly_the_points_no_other_point_dominates():
    rng = np.random.default_rng(3)
    for maximize in ([True, False], [True, True], [False, True, False]):
        points = np.round(rng.random((40, len(maximize))), 1)  # rounding makes ties and duplicates
        front = set(non_dominated(points, maximize).tolist())
        expected = {i for i in range(len(points))
                    if not any(_dominates(points[j], points[i], maximize) for j in range(len(points)))}
        assert front == expected and front


def test_bad_points_are_refused_with_what_is_wrong():
    with pytest.raises(ValueError, match="2-D"):
        non_dominated([0.5, 1.0], MAX_MIN)
    with pytest.raises(ValueError, match="3 entries for 2 objectives"):
        non_dominated([[0.5, 1.0]], [True, False, True])
    with pytest.raises(ValueError, match="finite"):
        non_dominated([[np.nan, 1.0]], MAX_MIN)


def test_cheapest_near_best_gives_up_at_most_the_tolerance():
    score, cost = [0.90, 0.895, 0.88, 0.70], [10.0, 2.0, 0.5, 0.1]
    assert cheapest_near_best(score, cost) == 1  # within 1 point of 0.90
    assert cheapest_near_best(score, cost, tolerance=0.02) == 2
    assert cheapest_near_best(score, cost, tolerance=0.0) == 0
    assert cheapest_near_best([0.8, 0.8], [1.0, 1.0]) == 0  # ties: the first
    assert cheapest_near_best([], []) is None


def _trial(number, bacc, seconds, state=TrialState.COMPLETE):
    return TrialRecord(number, state, value=bacc, values=(bacc, seconds),
                       attrs={"estimator_params": {"C": float(number)}})


def test_the_best_trial_of_two_objectives_is_the_most_accurate_and_on_ties_the_faster():
    trials = [_trial(0, 0.80, 1.0), _trial(1, 0.90, 5.0), _trial(2, 0.90, 2.0), _trial(3, 0.95, 9.0, TrialState.PRUNED)]
    assert best_trial(trials, ("maximize", "minimize")).number == 2
    # one objective: as before, the earliest among equal values
    single = [TrialRecord(t.number, t.state, value=t.value) for t in trials]
    assert best_trial(single).number == 1
    assert best_trial([], ("maximize", "minimize")) is None


def test_the_best_trial_is_a_point_of_the_front():
    rng = np.random.default_rng(0)
    for _ in range(20):
        trials = [_trial(i, float(a), float(s)) for i, (a, s) in enumerate(np.round(rng.random((15, 2)), 1))]
        best = best_trial(trials, ("maximize", "minimize"))
        front = {trials[i].number for i in non_dominated([t.values for t in trials], MAX_MIN)}
        assert best.number in front and best.value == max(t.value for t in trials)


def test_a_row_front_holds_the_non_dominated_completed_trials_best_first():
    options = TuneOptions(objectives=("balanced_accuracy", "fit_seconds"))
    trials = [_trial(0, 0.80, 1.0), _trial(1, 0.90, 5.0), _trial(2, 0.85, 6.0), _trial(3, 0.70, 0.2),
              _trial(4, 0.99, 0.1, TrialState.PRUNED), TrialRecord(5, TrialState.FAIL)]
    front = pareto_front(trials, options)
    assert [p.trial for p in front] == [1, 0, 3]
    assert front[0] == ParetoPoint(1, {"C": 1.0}, {"balanced_accuracy": 0.90, "fit_seconds": 5.0})
    for a, b in itertools.permutations(front, 2):
        assert not _dominates(list(a.values.values()), list(b.values.values()), MAX_MIN)


def test_one_objective_is_the_metric_and_changes_nothing():
    options = TuneOptions(objectives=("accuracy",))
    options.check()
    assert options.metric == "accuracy" and not options.multi_objective and options.directions == ("maximize",)
    assert TuneOptions().metric == "balanced_accuracy" and TuneOptions().directions == ("maximize",)


def test_several_objectives_give_one_direction_each():
    options = TuneOptions(objectives=["balanced_accuracy", "fit_seconds", "predict_seconds"])
    options.check()
    assert options.multi_objective and options.metric == "balanced_accuracy"
    assert options.directions == ("maximize", "minimize", "minimize")


@pytest.mark.parametrize("kwargs, message", [
    ({"objectives": ("balanced_accuracy", "speed")},
     f"--objective must be one of {', '.join(OBJECTIVES)}, got 'speed'"),
    ({"objectives": ("fit_seconds", "balanced_accuracy")}, "the first --objective .* must be a metric"),
    ({"objectives": ("accuracy", "fit_seconds", "accuracy")}, "names an objective twice"),
    ({"objectives": ("accuracy", "fit_seconds"), "metric": "balanced_accuracy"},
     "--metric balanced_accuracy and the first --objective accuracy disagree"),
])
def test_bad_objectives_are_refused_naming_the_problem(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TuneOptions(**kwargs).check()


def test_a_study_file_asks_for_several_objectives_like_the_command_line(tmp_path):
    from automil.tune.options import read_study_file

    path = tmp_path / "cost.toml"
    path.write_text('[options]\nobjectives = ["accuracy", "predict_seconds"]\n\n[[study]]\ndataset = "fox"\n')
    (_, _, options), = read_study_file(path)
    assert options.objectives == ("accuracy", "predict_seconds") and options.metric == "accuracy"
    assert options.directions == ("maximize", "minimize")
    path.write_text('[options]\nmetric = "balanced_accuracy"\nobjectives = ["accuracy", "fit_seconds"]\n\n'
                    '[[study]]\ndataset = "fox"\n')
    with pytest.raises(ValueError, match="disagree"):
        read_study_file(path)


def test_the_scatter_draws_every_trial_one_colour_per_learner_on_a_log_time_axis():
    from automil.track.writing.figures import pareto_figure

    points = {"fast": [(0.01, 0.70), (0.02, 0.72), (0.05, 0.71)], "slow": [(3.0, 0.80), (9.0, 0.78)], "none": []}
    axes = pareto_figure(points, "made up").axes[0]
    assert axes.get_xscale() == "log"
    labels = [text.get_text() for text in axes.get_legend().get_texts()]
    assert labels == ["fast (3)", "slow (2)", "front across learners"]
    drawn = np.vstack([c.get_offsets() for c in axes.collections])
    assert {tuple(p) for p in drawn} >= {(x, 100 * y) for pairs in points.values() for x, y in pairs}
    colours = {tuple(c.get_facecolor()[0][:3]) for c in axes.collections}  # the ringed front: same colour
    assert len(colours) == 2
    assert "no completed trials" in [t.get_text() for t in pareto_figure({}, "empty").axes[0].texts]
