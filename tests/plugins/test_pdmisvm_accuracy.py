"""pdMISVM accuracy on the classic benchmarks without tuning (one stratified 10-fold CV, seed 0).

The paper prints no accuracy table for these sets, so (targets.md section 1) the learners are held to their
family: the linear misvm learners (SIL, mi-SVM, MI-SVM, NSK) run on the same folds in targets.md 1b, minus 3
points. musk2 has no peer on this protocol (misvm did not finish a fold) and its published figures are tuned
RBF models; digits-bags has no published figure. Both are held to 70% (20 points above chance, 8 above
musk2's majority class). The measured table and the reasons for each gap are in docs/accuracy-pdmisvm.md.

targets.md 2 adds the multi-class case: on the 6-class SIVAL subset, pdMISVM's balanced accuracy at least
that of one-vs-rest mi-SVM on the same folds.
"""

import importlib.util
from pathlib import Path

import pytest

import automil

BENCH = Path(__file__).resolve().parents[2] / "bench" / "pdmisvm_accuracy.py"
_spec = importlib.util.spec_from_file_location("pdmisvm_accuracy", BENCH)
accuracy_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(accuracy_table)

# Lowest linear SIL / mi-SVM / MI-SVM / NSK accuracy in targets.md 1b, minus 3 points.
FLOOR = {"musk1": 74.8 - 3, "elephant": 72.5 - 3, "fox": 52.5 - 3, "tiger": 74.5 - 3,
         "musk2": 70.0, "digits-bags": 70.0}


@pytest.mark.accuracy
@pytest.mark.parametrize("dataset", accuracy_table.DATASETS)
def test_untuned_pdmisvm_reaches_its_family_range(dataset, data_dir):
    bags = automil.load_bags(dataset)
    for learner in accuracy_table.LEARNERS:
        accuracy, _ = accuracy_table.cross_validated_accuracy(bags, accuracy_table.build(learner, dataset,
                                                                                         "learner"))
        assert 100 * accuracy >= FLOOR[dataset], (f"{learner} on {dataset}: {100 * accuracy:.1f}% < "
                                                  f"{FLOOR[dataset]:.1f}%")


# One-vs-rest mi-SVM (automil's `mi-svm`, defaults) on the same folds: 73.6% (265/360 bags), measured with
# the command in docs/accuracy-pdmisvm.md. The six classes have 60 bags each, so accuracy over all test
# folds equals balanced accuracy.
MI_SVM_SIVAL = 73.6


@pytest.mark.accuracy
def test_untuned_exact_pdmisvm_beats_one_vs_rest_mi_svm_on_six_sival_classes(data_dir):
    bags = automil.load_bags("sival")
    accuracy, _ = accuracy_table.cross_validated_accuracy(bags, accuracy_table.build("pdmisvm", "sival",
                                                                                     "learner"))
    assert 100 * accuracy >= MI_SVM_SIVAL, f"pdmisvm on sival: {100 * accuracy:.1f}% < mi-SVM {MI_SVM_SIVAL}%"
