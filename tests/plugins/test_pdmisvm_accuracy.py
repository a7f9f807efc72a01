"""pdMISVM accuracy on the classic benchmarks without tuning (one stratified 10-fold CV, seed 0).

The paper prints no accuracy table for these sets (docs/published.md, section 2), so the learners are held to
their family: the linear misvm learners (SIL, mi-SVM, MI-SVM, NSK) run on the same folds (docs/published.md,
section 3), minus 3 points. musk2 has no peer on this protocol (misvm did not finish a fold) and its published
figures are tuned RBF models; digits-bags has no published figure. Both are held to 70% (20 points above
chance, 8 above musk2's majority class). The measured table and the reasons for each gap are in
docs/accuracy-pdmisvm.md.

musk2 and the SIVAL comparison run on demand (``pytest -m slow``): they were three minutes of the default run.

docs/published.md, section 4, adds the multi-class case: on the 6-class SIVAL subset, pdMISVM's balanced
accuracy at least that of one-vs-rest mi-SVM on the same folds.
"""

import numpy as np
import pytest

import automil
from automil.evaluation.cross_validation import cross_validated_predictions

DATASETS = ("musk1", "musk2", "elephant", "fox", "tiger", "digits-bags")
LEARNERS = ("pdmisvm", "pdmisvm-inexact")
# Lowest linear SIL / mi-SVM / MI-SVM / NSK peer accuracy (docs/published.md, section 3), minus 3 points.
FLOOR = {"musk1": 74.8 - 3, "elephant": 72.5 - 3, "fox": 52.5 - 3, "tiger": 74.5 - 3,
         "musk2": 70.0, "digits-bags": 70.0}


@pytest.mark.accuracy
@pytest.mark.parametrize("dataset", [pytest.param(name, marks=[pytest.mark.slow] if name == "musk2" else [])
                                     for name in DATASETS])
def test_untuned_pdmisvm_reaches_its_family_range(dataset, data_dir):
    bags = automil.load_bags(dataset)
    for learner in LEARNERS:
        accuracy = _accuracy(automil.get_learner(learner).build(), bags)
        assert 100 * accuracy >= FLOOR[dataset], (f"{learner} on {dataset}: {100 * accuracy:.1f}% < "
                                                  f"{FLOOR[dataset]:.1f}%")


def _accuracy(estimator, bags) -> float:
    predicted, _, _ = cross_validated_predictions(estimator, bags)
    return float(np.mean(predicted == bags.y))


@pytest.mark.accuracy
@pytest.mark.slow  # two minutes: six one-vs-rest mi-SVMs on ten folds of 360 bags
def test_untuned_exact_pdmisvm_beats_one_vs_rest_mi_svm_on_six_sival_classes(data_dir):
    """The target of docs/published.md, section 4, on the same folds. The six classes have 60 bags each, so
    accuracy over all test folds equals balanced accuracy."""
    bags = automil.load_bags("sival")
    accuracy = _accuracy(automil.get_learner("pdmisvm").build(), bags)
    mi_svm = _accuracy(automil.get_learner("mi-svm").build(), bags)
    assert accuracy >= mi_svm, f"pdmisvm on sival: {100 * accuracy:.1f}% < mi-SVM {100 * mi_svm:.1f}%"
