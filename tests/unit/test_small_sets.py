"""Small sets: the one-class guard judges all the bags a trial or a headline scored (not a fold of five), and
automil takes fewer folds where its default would leave test folds of a few bags (docs/protocol.md, "Small
sets")."""

import pickle
from dataclasses import replace

import numpy as np
import pytest

from automil import Bags
from automil.evaluation.folds import FEWEST_FOLDS, MIN_TEST_BAGS, MIN_TEST_CLASS_BAGS, bag_folds, folds_for_size
from automil.evaluation.folds_file import RunFolds, read_fold_file
from automil.records import TrialRecord, TrialState
from automil.tune.final.leaderboard import Evaluation, Refit, result_row
from automil.tune.loop.trial_fits import ONE_CLASS_FOLD_BAGS, TrialFits
from automil.tune.options import DEFAULT_FOLDS, AutoFolds, TuneOptions
from automil.tune.studies.trial_folds import TrialFolds

# The first half of UCSB breast cancer as a user with 29 slides has it: 12 negative, 17 positive.
COHORT = np.array([0] * 12 + [1] * 17)


def _bags(y, groups=None) -> Bags:
    return Bags.from_list([np.full((2, 3), i, dtype=float) for i in range(len(y))], np.asarray(y),
                          names=[f"bag{i}" for i in range(len(y))], groups=groups)


def _labels(negative: int, positive: int) -> np.ndarray:
    return np.array([0] * negative + [1] * positive)


def _judged(y, folds: TrialFolds, predict) -> list[str | None]:
    """What :meth:`TrialFits.one_class` says after each fit ``k`` of ``folds``, whose test bags
    ``predict(k, test)`` labels."""
    fits, said = TrialFits(folds, limit=10.0), []
    for k, (_, test) in enumerate(folds.fits):
        fits.predictions.append(predict(k, test))
        said.append(fits.one_class(y, f"fold {k}"))
    return said


def test_a_model_giving_each_fold_of_five_one_class_but_both_classes_over_the_bags_is_no_one_class_model():
    folds = TrialFolds.cross_validation(bag_folds(COHORT, DEFAULT_FOLDS, seed=0))
    assert max(len(test) for _, test in folds.fits) <= 5
    # fold k: every bag called k % 2, what the guard judging each fold stopped
    assert _judged(COHORT, folds, lambda k, test: np.full(len(test), k % 2)) == [None] * DEFAULT_FOLDS


def test_a_model_giving_every_bag_one_class_is_told_once_the_trials_fits_are_in():
    folds = TrialFolds.cross_validation(bag_folds(COHORT, DEFAULT_FOLDS, seed=0))
    said = _judged(COHORT, folds, lambda k, test: np.ones(len(test), dtype=int))
    assert said[:-1] == [None] * (DEFAULT_FOLDS - 1)  # no fold of five tells it
    assert said[-1] == f"the 29 bags its {DEFAULT_FOLDS} fits scored"


def test_a_fold_large_enough_tells_a_one_class_model_at_that_fold():
    y = _labels(2 * ONE_CLASS_FOLD_BAGS, 2 * ONE_CLASS_FOLD_BAGS)  # 2 folds of 100 bags
    folds = TrialFolds.cross_validation(bag_folds(y, 2, seed=0))
    said = _judged(y, folds, lambda k, test: np.zeros(len(test), dtype=int))
    assert said[0] == f"fold 0 ({2 * ONE_CLASS_FOLD_BAGS} bags)"


def test_a_headline_is_flagged_one_class_only_when_its_out_of_fold_predictions_give_every_bag_one_class():
    options = TuneOptions(folds=3, repeats=1, protocol="nested", jobs=1)
    best = TrialRecord(0, TrialState.COMPLETE, 0.6, attrs={"estimator_params": {}})
    truth = np.array([0, 1, 1, 0, 1])

    def row(predicted):
        return result_row("ucsb", options, Evaluation("x", "p", "ucsb/x", [best], best, outer_best=[best] * 3,
                                                      predictions={Refit.NESTED: [(truth, p) for p in predicted]}))

    ones, zeros = np.ones(5, dtype=int), np.zeros(5, dtype=int)
    assert not row([ones, zeros, ones]).headline.one_class  # each fold one class, both classes over the bags
    assert row([ones, ones, ones]).headline.one_class


@pytest.mark.parametrize(("negative", "positive", "folds"), [
    (12, 17, 4),  # 29 bags: 6 folds would test 4 or 5 bags, 3 folds train inner fits on 10; 4 test 7 or 8
    (20, 20, 5),  # 40 bags: 5 folds of 8
    (32, 26, 6),  # 58 bags: 6 folds of 9 or 10
    (10, 40, 5),  # 50 bags, but 10 of a class: 5 folds keep 2 of it in every test fold
    (5, 5, 4),  # the fewest automil takes
    (3, 30, 3),  # fewer still where a class has fewer bags: every fold tests one of it
    (100, 100, 6),
])
def test_automil_takes_fewer_folds_below_test_folds_of_8_bags_and_2_of_each_class(negative, positive, folds):
    y = _labels(negative, positive)
    assert folds_for_size(y, DEFAULT_FOLDS) == folds
    if folds > FEWEST_FOLDS:  # where the fewest folds do not bind, every test fold is as large as the rule asks
        assignment = bag_folds(y, folds, seed=0)
        assert min(np.bincount(assignment)) >= MIN_TEST_BAGS
        assert min(np.sum((assignment == f) & (y == c)) for f in range(folds) for c in (0, 1)) >= MIN_TEST_CLASS_BAGS


def test_groups_bound_the_folds():
    y = _labels(24, 24)
    assert folds_for_size(y, DEFAULT_FOLDS) == 6
    assert folds_for_size(y, DEFAULT_FOLDS, groups=np.arange(48) % 5) == 5


def test_a_run_on_29_bags_takes_4_folds_and_its_plan_says_so():
    bags = _bags(COHORT)
    options = TuneOptions().for_data(bags)
    assert (options.protocol, options.folds, options.outer_folds) == ("nested", 4, [0, 1, 2, 3])
    assert options.folds_note(bags) == ('29 bags: 4 folds instead of 6: test folds of 7 to 8 bags, 3 of the '
                                        'smallest class (12 bags); see docs/protocol.md, "Small sets"')
    assert TuneOptions().for_data(bags).folds == options.folds  # the data's size decides: a rerun asks the same
    assert TuneOptions().for_data(_bags(_labels(32, 26))).folds_note(_bags(_labels(32, 26))) is None


def test_folds_the_user_gives_are_kept_and_the_plan_says_they_are_small():
    bags = _bags(COHORT)
    options = TuneOptions(folds=6).for_data(bags)
    assert options.folds == 6
    assert options.folds_note(bags).startswith("29 bags: 6 folds (as --folds gives them) leave test folds of 4 to "
                                               "5 bags, 2 of the smallest class (12 bags): fewer than 8, or 2 of a "
                                               "class, to score a fold by")


def test_automils_choice_of_folds_survives_copies_and_processes():
    options = replace(TuneOptions(), seed=3)
    assert isinstance(options.folds, AutoFolds) and options.folds == DEFAULT_FOLDS
    assert isinstance(pickle.loads(pickle.dumps(options)).folds, AutoFolds)  # --jobs processes get the plan
    assert not isinstance(TuneOptions(folds=DEFAULT_FOLDS).folds, AutoFolds)


def test_a_folds_file_of_a_small_set_gives_a_rerun_the_same_folds(tmp_path):
    bags = _bags(COHORT)
    options = TuneOptions(repeats=2).for_data(bags)
    drawn = RunFolds.drawn("ucsb", bags, options.folds, options.seed, options.repeats)
    path = tmp_path / "folds.json"
    path.write_text(drawn.to_json())
    given = read_fold_file(path)
    rerun = TuneOptions(folds_file=str(path)).with_fold_file(given).for_data(bags)
    assert rerun.folds == 4 and not isinstance(rerun.folds, AutoFolds)
    assert "4 folds (as --folds-file gives them) leave test folds of 7 to 8 bags" in rerun.folds_note(bags)
    assert given.run_folds("ucsb", bags, rerun.repeats).digest == drawn.digest
