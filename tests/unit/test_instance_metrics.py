"""The instance figures on hand-made arrays: the AUC of instance scores, the precision of witnesses, a
fitted model's figures on one test fold, and their mean over the outer folds on a result row."""

import numpy as np
import pytest

from automil import Bags
from automil.evaluation.instance_metrics import InstanceFold, instance_auc, instance_fold, witness_precision
from automil.records import Headline, InstanceFigures, LearnerResult
from automil.tune.final.leaderboard import instance_figures


def test_instance_auc_is_the_share_of_positive_negative_pairs_ranked_right_with_ties_as_half():
    positive = np.array([True, False, True, False, False, True, False])
    scores = np.array([0.9, 0.1, 0.4, 0.4, 0.7, 0.6, 0.2])
    # positives 0.9, 0.4, 0.6 against negatives 0.1, 0.4, 0.7, 0.2: 0.9 beats all 4; 0.4 beats 0.1 and 0.2,
    # ties 0.4 (1/2) and loses to 0.7; 0.6 beats 0.1, 0.4 and 0.2: (4 + 2.5 + 3) / 12 pairs
    assert instance_auc(positive, scores) == pytest.approx(9.5 / 12)


def test_instance_auc_of_instances_of_one_class_is_none_not_a_number():
    assert instance_auc(np.zeros(4, dtype=bool), np.arange(4.0)) is None
    assert instance_auc(np.ones(4, dtype=bool), np.arange(4.0)) is None


def test_witness_precision_counts_the_positive_bags_whose_witness_is_a_positive_instance():
    offsets = np.array([0, 3, 5, 9, 10])  # bags of 3, 2, 4 and 1 instances
    positive = np.zeros(10, dtype=bool)
    positive[[1, 6, 8]] = True  # bag 0's second, bag 2's second and fourth instance
    witness = np.array([1, 0, 3, 0])  # bag 0: right; bag 2: right (its fourth); bag 1 is negative
    assert witness_precision(positive, offsets, witness, [True, False, True, False]) == 1.0
    assert witness_precision(positive, offsets, np.array([0, 0, 0, 0]), [True, False, True, False]) == 0.0
    assert witness_precision(positive, offsets, np.array([1, 0, 0, 0]), [True, True, True, False]) == \
        pytest.approx(1 / 3)  # bag 1 has no positive instance, bag 2's first instance is negative
    assert witness_precision(positive, offsets, witness, [False] * 4) is None


class _Witnessing:
    """A fitted two-class model on 1-D instances: its instance score is the feature, its witness the
    arg-max of the feature in each bag."""

    classes_ = np.array(["neg", "pos"])

    def instance_scores(self, bags):
        return np.column_stack((-bags.X[:, 0], bags.X[:, 0]))

    def witness(self, bags):
        return np.array([int(np.argmax(bag[:, 0])) for bag in bags])


class _BagLevel:
    classes_ = np.array(["neg", "pos"])


def test_a_model_is_scored_against_the_instances_labelled_with_the_positive_bag_class():
    # synthetic's convention: the planted instance carries its bag's class, noise -1
    X = np.array([[0.2], [0.9], [0.5], [0.8], [0.4], [0.3]])
    bags = Bags(X, [0, 2, 4, 6], np.array(["pos", "neg", "pos"]),
                instance_y=np.array(["-1", "pos", "neg", "-1", "-1", "pos"]))
    fold = instance_fold(_Witnessing(), bags)
    # positives 0.9 and 0.3 against 0.2, 0.5, 0.8, 0.4 (a negative bag's planted instance among them):
    # 0.9 beats 4, 0.3 beats 1
    assert fold.instance_auc == pytest.approx(5 / 8)
    assert fold.witness_precision == 0.5  # bag 0's witness (0.9) is its positive instance, bag 2's (0.4) is noise
    assert instance_fold(_BagLevel(), bags) is None
    assert instance_fold(_Witnessing(), Bags(X, [0, 2, 4, 6], np.array(["pos", "neg", "pos"]))) is None


def test_the_figures_of_a_row_are_the_mean_and_sd_over_folds_that_have_them():
    folds = [InstanceFold(0.8, 1.0), InstanceFold(None, 0.5), InstanceFold(0.6, 0.0), None]
    figures = instance_figures(folds)
    assert figures.instance_auc == pytest.approx(0.7)
    assert figures.instance_auc_std == pytest.approx(np.std([0.8, 0.6], ddof=1))
    assert figures.witness_precision == pytest.approx(0.5) and figures.witness_precision_std == pytest.approx(0.5)
    assert instance_figures([InstanceFold(0.9, None)]).witness_precision is None  # no witness: no precision
    assert instance_figures([None, None]) is None and instance_figures([InstanceFold()]) is None


def test_a_row_holds_the_figures_as_flat_keys_at_its_end_and_reads_them_back():
    figures = InstanceFigures(instance_auc=0.9, instance_auc_std=0.05, witness_precision=0.75)
    row = LearnerResult(learner="sil", headline=Headline(accuracy=0.8), status="ok", instance=figures).to_dict()
    assert list(row)[-4:] == ["instance_auc", "instance_auc_std", "witness_precision", "witness_precision_std"]
    assert row["witness_precision_std"] is None and "instance" not in row
    assert LearnerResult.from_dict(row).instance == figures
    plain = LearnerResult(learner="nsk", headline=Headline(accuracy=0.8), status="ok").to_dict()
    assert "instance_auc" not in plain and LearnerResult.from_dict(plain).instance is None
