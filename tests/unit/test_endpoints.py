"""The label array says its task: survival and regression labels built and checked (bad ones named by
position), the times a survival fold is scored at, and folds stratified on events, time and target, grouped
as always, classification's folds as they were."""

import json
import pickle

import numpy as np
import pytest
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold
from sksurv.metrics import integrated_brier_score
from sksurv.util import Surv

from automil import Bags
from automil.endpoints import (
    EVALUATION_POINTS,
    EVALUATION_QUANTILES,
    LabelError,
    evaluation_times,
    label_counts,
    regression_labels,
    strata,
    survival_labels,
    task_of,
)
from automil.evaluation.folds import bag_folds, bag_sample, fold_sizes, folds_for_size, split_groups, untrainable
from automil.evaluation.folds_file import RunFolds, read_fold_file


def cohort(n=120, censored=0.4, seed=0, ties=False):
    """Survival labels of ``n`` bags, about ``censored`` of them censored (times rounded to whole units: ties)."""
    rng = np.random.default_rng(seed)
    time = rng.exponential(10.0, n)
    return survival_labels(np.ceil(time) if ties else time, rng.random(n) >= censored)


def test_the_label_array_says_its_task_through_subsets_and_pickles():
    y = cohort(8)
    assert task_of(y) == "survival" and task_of(regression_labels([1.0, 2.5])) == "regression"
    assert task_of(np.array(["a", "b"])) == task_of([0, 1]) == "classification"
    assert task_of(Surv.from_arrays(event=[True, False], time=[1.0, 2.0])) == "survival"  # scikit-survival's own
    bags = Bags.from_list([np.full((2, 3), i, dtype=float) for i in range(8)], y)
    assert task_of(bags.subset([1, 4]).y) == task_of(pickle.loads(pickle.dumps(bags)).y) == "survival"


def test_survival_labels_are_scikit_survivals_layout():
    time, event = [3.0, 1.5, 7.0], [1, 0, True]
    ours, theirs = survival_labels(time, event), Surv.from_arrays(event=[True, False, True], time=time)
    assert ours.dtype.names == theirs.dtype.names and ours["event"].dtype == theirs["event"].dtype
    assert ours["event"].tolist() == theirs["event"].tolist() and ours["time"].tolist() == theirs["time"].tolist()
    assert regression_labels([1, "2.5"])["target"].tolist() == [1.0, 2.5]


@pytest.mark.parametrize("build, position, problem", [
    (lambda: survival_labels([1.0, -2.0, 3.0], [1, 0, 1]), 1, "time -2 is negative"),
    (lambda: survival_labels([1.0, 2.0, np.nan], [1, 0, 1]), 2, "time is missing"),
    (lambda: survival_labels([1.0, "soon"], [1, 0]), 1, "time 'soon' is not a number"),
    (lambda: survival_labels([1.0, 2.0, 3.0], [1, 2, 0]), 1, "event 2 is neither 0"),
    (lambda: survival_labels([1.0, 2.0], [1, None]), 1, "event None is not a number"),
    (lambda: survival_labels([1.0, 2.0], [0, 0]), None, "no event among the 2 labels"),
    (lambda: survival_labels([1.0, 2.0], [1]), None, "2 times but 1 events"),
    (lambda: regression_labels([1.0, 2.0, np.nan]), 2, "target is missing"),
    (lambda: regression_labels([1.0, "high"]), 1, "target 'high' is not a number"),
    (lambda: regression_labels([np.inf]), 0, "target is inf"),
])
def test_a_bad_label_is_named_by_its_position(build, position, problem):
    with pytest.raises(LabelError, match=problem) as error:
        build()
    assert error.value.position == position and isinstance(error.value, ValueError)
    assert (f"position {position}:" in str(error.value)) == (position is not None)


def test_label_counts_are_classes_events_and_censored_or_bags():
    y = cohort(50)
    assert label_counts(y).tolist() == [int(y["event"].sum()), int((~y["event"]).sum())]
    assert label_counts(regression_labels(np.arange(7.0))).tolist() == [7]
    assert label_counts(np.array(["b", "a", "b"])).tolist() == [1, 2]


@pytest.mark.parametrize("seed", range(6))
def test_evaluation_times_are_training_event_quantiles_strictly_inside_the_test_range(seed):
    y = cohort(90, seed=seed)
    train, test = y[:60], y[60:]
    times = evaluation_times(train, test)
    followed = test["time"][test["time"] <= train["time"].max()]
    assert 2 <= len(times) <= EVALUATION_POINTS and np.all(np.diff(times) > 0)
    assert followed.min() < times.min() and times.max() < followed.max()
    events = train["time"][train["event"]]
    low, high = np.quantile(events, EVALUATION_QUANTILES)
    if low > followed.min() and high < followed.max():  # the quantiles all fit: they are the times
        assert times.min() == pytest.approx(low) and times.max() == pytest.approx(high)
    assert np.array_equal(times, evaluation_times(train.copy(), test.copy()))
    integrated_brier_score(train, test[test["time"] <= train["time"].max()], np.full((len(followed), len(times)),
                                                                                        0.5), times)


def test_evaluation_times_fall_back_to_the_test_range_and_stop_at_the_training_follow_up():
    train = survival_labels([1.0, 2.0, 3.0, 4.0, 50.0], [1, 1, 1, 1, 0])
    narrow = survival_labels([10.0, 12.0, 60.0], [1, 0, 1])  # no training quantile inside; 60 after follow-up
    times = evaluation_times(train, narrow)
    assert len(times) == EVALUATION_POINTS and 10.0 < times.min() and times.max() < 12.0
    assert evaluation_times(train, survival_labels([10.0, 10.0, 70.0], [1, 1, 0])).size == 0


def test_survival_folds_balance_events_and_time_terciles_better_than_chance_would():
    y = cohort(150, censored=0.7, seed=3)
    for seed in range(5):
        folds = bag_folds(y, 5, seed)
        events = [int(y["event"][folds == f].sum()) for f in range(5)]
        assert max(events) - min(events) <= 3  # one event apart in each of the three event strata at most
        late = y["time"] > np.quantile(y["time"][y["event"]], 2 / 3)
        late_events = [int((y["event"] & late)[folds == f].sum()) for f in range(5)]
        assert max(late_events) - min(late_events) <= 1
    assert np.array_equal(bag_folds(y, 5, 0), bag_folds(y, 5, 0))


def test_every_stratum_holds_a_bag_per_fold_even_with_ties_and_few_censored():
    for y in (cohort(60, ties=True), cohort(40, censored=0.05, seed=1), regression_labels(np.repeat([1.0, 2.0, 3.0],
                                                                                                  [30, 2, 3]))):
        for n_folds in (3, 5, 6):
            _, counts = np.unique(strata(y, n_folds), return_counts=True)
            assert counts.min() >= n_folds
            bag_folds(y, n_folds, 0)
    few = cohort(40, censored=0.05, seed=1)
    assert len(np.unique(strata(few, 5))) <= 3  # the censored bags, fewer than the folds, are pooled


def test_regression_folds_each_hold_every_target_quantile():
    target = np.random.default_rng(4).normal(size=60)
    y = regression_labels(target)
    folds = bag_folds(y, 5, 2)
    bins = np.searchsorted(np.quantile(target, [0.2, 0.4, 0.6, 0.8]), target)
    for fold in range(5):
        assert sorted(np.unique(bins[folds == fold])) == [0, 1, 2, 3, 4]
    assert len(np.unique(strata(y, 5))) == 5


def test_grouped_survival_folds_keep_a_patient_together_and_balance_events():
    spreads = []
    for seed in range(10):
        patients = cohort(60, seed=seed)
        groups = np.repeat(np.arange(60), np.random.default_rng(seed).integers(1, 4, 60))  # 1 to 3 slides each
        folds = bag_folds(patients[groups], 4, 1, groups)
        assert split_groups(folds, groups) is None
        events = [int(patients["event"][np.unique(groups[folds == f])].sum()) for f in range(4)]
        spreads.append(max(events) - min(events))
    assert np.mean(spreads) <= 2.5  # folds drawn without the strata: 3.2 on these cohorts


def test_classification_folds_are_scikit_learns_stratified_folds_of_the_labels():
    y = np.random.default_rng(6).choice(["a", "b", "c"], 50)
    expected = np.empty(50, dtype=np.int64)
    for fold, (_, test) in enumerate(StratifiedKFold(5, shuffle=True, random_state=7).split(np.zeros(50), y)):
        expected[test] = fold
    assert np.array_equal(bag_folds(y, 5, 7), expected)
    groups = np.arange(50) // 2
    splits = StratifiedGroupKFold(5, shuffle=True, random_state=7).split(np.zeros(50), y, groups)
    for fold, (_, test) in enumerate(splits):
        expected[test] = fold
    assert np.array_equal(bag_folds(y, 5, 7, groups), expected)
    assert strata(y, 5) is not None and np.array_equal(strata(y, 5), y)


def test_fold_counts_of_survival_and_regression_labels_are_events_and_bags():
    y = cohort(200, censored=0.9, seed=8)
    events = int(y["event"].sum())
    assert folds_for_size(y, 6) == min(6, max(4, events // 2), events)
    assert f"({events} events)" in fold_sizes(y, 4)
    assert folds_for_size(regression_labels(np.arange(24.0)), 6) == 4  # 24 bags: test folds of 8 at 3 folds
    assert fold_sizes(regression_labels(np.arange(24.0)), 4) == "test folds of 6 bags"
    assert untrainable(y, ~y["event"]) == "with an event" and untrainable(y, y["event"]) is None
    assert untrainable(regression_labels([1.0, 2.0]), np.array([True, False])) is None


def test_a_training_sample_of_survival_bags_is_stratified_and_nested():
    for seed in range(5):
        y = cohort(100, censored=0.5, seed=seed)
        sample = bag_sample(y, np.arange(100), 0.1, seed=seed)
        events = int(y["event"][sample].sum())
        assert abs(events - (len(sample) - events)) <= 1 and len(sample) < 20
        assert set(sample) <= set(bag_sample(y, np.arange(100), 0.3, seed=seed))


def test_survival_folds_round_trip_through_folds_json_and_a_fold_of_every_event_is_refused(tmp_path):
    y = cohort(24, censored=0.5, seed=10)
    names = [f"p{i}" for i in range(24)]
    bags = Bags.from_list([np.full((2, 3), i, dtype=float) for i in range(24)], y, names=names)
    drawn = RunFolds.drawn("cohort", bags, 3, seed=1, n_repeats=2)
    path = tmp_path / "folds.json"
    path.write_text(drawn.to_json())
    assert read_fold_file(path).run_folds("cohort", bags, 2).digest == drawn.digest
    events = [n for n, e in zip(names, y["event"]) if e]
    rest = [n for n, e in zip(names, y["event"]) if not e]
    path.write_text(json.dumps({"format": "automil-folds", "version": 1, "folds": 2,
                                "repeats": [[events, rest]]}))
    with pytest.raises(ValueError, match="fold 0 of the tuning folds holds every bag with an event"):
        read_fold_file(path).run_folds("cohort", bags, 1)
