"""What a trial fits and scores on: the tuning folds cross-validated, or one inner hold-out of a fifth of the
tuning bags scored in blocks (automil.tune.studies.trial_folds)."""

import numpy as np
import pytest

from automil.evaluation.folds import bag_folds, fold_splits
from automil.evaluation.folds_file import RunFolds
from automil.tune.options import TuneOptions
from automil.tune.studies.plan import Plan
from automil.tune.studies.trial_folds import INNER_BLOCKS, INNER_FIFTHS, INNER_MIN_CLASS_BAGS, TrialFolds, inner_holdout


def _labels(n_bags: int) -> np.ndarray:
    return np.array([0, 1] * (n_bags // 2))


def test_the_inner_holdout_is_a_stratified_fifth_of_the_tuning_bags_in_blocks():
    y = _labels(1400)
    assignment = bag_folds(y, 4, seed=0)
    validation = inner_holdout(y, assignment, 0, seed=0)
    fifth = np.flatnonzero(validation >= 0)
    assert not np.any(assignment[fifth] == 0)  # never a held-out bag
    assert len(fifth) == pytest.approx(np.sum(assignment != 0) / INNER_FIFTHS, abs=2)
    assert sorted(np.unique(validation[fifth])) == list(range(INNER_BLOCKS))
    for block in range(INNER_BLOCKS):  # every block holds both classes, about equally
        counts = np.bincount(y[validation == block], minlength=2)
        assert counts.min() >= counts.max() - 1
    assert np.array_equal(inner_holdout(y, assignment, 0, seed=0), validation)  # drawn from the seed
    assert not np.array_equal(inner_holdout(y, assignment, 0, seed=1), validation)


def test_the_inner_holdout_keeps_a_group_in_one_place():
    y = np.repeat(_labels(700), 2)  # 700 patients of two slides with one label
    groups = np.repeat(np.arange(700), 2)
    assignment = bag_folds(y, 4, seed=0, groups=groups)
    validation = inner_holdout(y, assignment, 0, seed=0, groups=groups)
    assert validation is not None
    for patient in range(700):
        assert len(set(validation[groups == patient].tolist())) == 1


def test_too_few_bags_of_a_class_in_the_fifth_keep_the_cross_validation():
    n = INNER_MIN_CLASS_BAGS * INNER_FIFTHS * 4 // 3  # bags of class 0: as many in the fifth as allowed
    y = np.array([0, 1] * n + [1] * 200)
    assignment = bag_folds(y, 4, seed=0)
    validation = inner_holdout(y, assignment, 0, seed=0)
    assert np.sum(y[validation >= 0] == 0) >= INNER_MIN_CLASS_BAGS
    y, assignment = y[40:], assignment[40:]  # 20 bags of each class fewer: too few of class 0 in the fifth
    assert inner_holdout(y, assignment, 0, seed=0) is None
    assert inner_holdout(_labels(364), bag_folds(_labels(364), 4, seed=0), 0, seed=0) is None  # a 10^5 set's


def test_a_trial_on_the_inner_holdout_is_one_fit_scoring_its_blocks_in_order():
    y = _labels(1400)
    assignment = bag_folds(y, 4, seed=0)
    validation = inner_holdout(y, assignment, 0, seed=0)
    folds = TrialFolds.held_out(assignment, 0, validation)
    (train, test), = folds.fits
    assert set(train) | set(test) == set(np.flatnonzero(assignment != 0)) and not set(train) & set(test)
    assert np.array_equal(folds.order, test) and np.array_equal(folds.blocks, validation[test])
    blocks = folds.fit_blocks()[0]
    assert [b for b, _ in blocks] == list(range(INNER_BLOCKS))
    for block, where in blocks:
        assert np.all(validation[test[where]] == block)


def test_cross_validation_is_a_block_a_fold():
    y = _labels(60)
    assignment = bag_folds(y, 4, seed=0)
    folds = TrialFolds.cross_validation(assignment, exclude=2)
    expected = fold_splits(assignment, exclude=2)
    assert len(folds.fits) == 3
    for (train, test), (want_train, want_test), blocks in zip(folds.fits, expected, folds.fit_blocks(), strict=True):
        assert np.array_equal(train, want_train) and np.array_equal(test, want_test)
        assert len(blocks) == 1 and blocks[0][0] == assignment[test[0]] and len(blocks[0][1]) == len(test)


def test_the_bags_an_inner_score_covers_are_the_tuning_bags_or_under_the_holdout_the_fifth():
    y = np.array([0] * 900 + [1] * 1100)
    assignment = bag_folds(y, 4, seed=0)
    folds = RunFolds("set", tuple(str(i) for i in range(len(y))), assignment, ())
    nested = Plan("set", [], TuneOptions(folds=4, protocol="nested"), folds, 0.0)
    for i, counts in enumerate(nested.inner_bags(y)):  # nested: every bag outside outer fold i
        assert counts.tolist() == [np.sum((y == c) & (assignment != i)) for c in (0, 1)]
    validation = inner_holdout(y, assignment, 0, seed=0)
    holdout = Plan("set", [], TuneOptions(folds=4, protocol="holdout"), folds, 0.0, validation=validation)
    [counts] = holdout.inner_bags(y)  # hold-out: the inner fifth alone
    assert counts.tolist() == [np.sum((y == c) & (validation >= 0)) for c in (0, 1)]
    assert INNER_MIN_CLASS_BAGS <= counts.min() < np.sum((y == 0) & (assignment != 0))
    # the run's choice weighs the main studies' tuning scores: every bag, or the hold-out's inner fifth
    assert nested.tuning_bags(y).tolist() == [900, 1100] and holdout.tuning_bags(y).tolist() == counts.tolist()
