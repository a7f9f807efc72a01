"""Accuracy of MIRF, BLRT and MIDF with default parameters on the classic MIL sets (docs/accuracy-forests.md).

Protocol: one stratified 10-fold CV over bags (seed 0), instances standardized on the training folds, the
learner's registered defaults. No accuracy is published for these learners on these sets (docs/published.md,
section 2), so each is held to the range of the MIL family (the lowest published figure among the methods of
docs/published.md, section 1), less 3 points for fold noise. MIDF runs on musk1 only here (a full 10-fold MIDF
on all five sets takes minutes); experiments/forest_accuracy.py makes the full table.
"""

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier

import automil
from automil.evaluation.cross_validation import cross_validated_predictions
from automil_forests.forest import resolve_max_features
from automil_forests.mirf import MIRFClassifier

# lowest published accuracy (%) among the methods of docs/published.md, section 1
FAMILY_LOW = {"musk1": 77.9, "musk2": 83.6, "elephant": 77.1, "fox": 57.8, "tiger": 73.0}
# musk2 (6598 instances, the largest of the five) runs on demand (``pytest -m slow``): its MIRF and BLRT
# checks were a minute and a half of the default run.
CASES = [pytest.param(learner, name, marks=[pytest.mark.slow] if name == "musk2" else [])
         for learner in ("mirf", "blrt") for name in FAMILY_LOW] + [("midf", "musk1")]


@pytest.fixture(scope="module")
def datasets(data_dir):
    return {name: automil.load_bags(name) for name in FAMILY_LOW}


@pytest.mark.accuracy
@pytest.mark.parametrize(("learner", "dataset"), CASES)
def test_default_accuracy_is_within_the_mil_family_range(learner, dataset, datasets):
    bags = datasets[dataset]
    predicted, folds, _ = cross_validated_predictions(automil.get_learner(learner).build(random_state=0, n_jobs=2),
                                                      bags, 10, 0)
    scores = np.array([np.mean(predicted[folds == f] == bags.y[folds == f]) for f in range(10)])
    assert len(scores) == 10
    accuracy = 100 * scores.mean()
    assert accuracy >= FAMILY_LOW[dataset] - 3, f"{learner} on {dataset}: {accuracy:.1f}%"


@pytest.mark.accuracy
def test_mirf_is_at_least_as_accurate_as_the_instance_forest_it_generalizes(datasets):
    # Issue 14: scikit-learn's forest on instances labelled by their bag, a bag scored by its best
    # instance, same trees and folds (experiments/forest_baseline.py; docs/accuracy-forests.md). Elephant is
    # where the two differ most (83.5 vs 74.5 measured); the others are within 1.5 points.
    accuracy = _mirf_and_instance_forest_accuracy(datasets["elephant"], n_folds=5, n_trees=100)
    assert accuracy["mirf"] >= accuracy["forest"], accuracy


def _mirf_and_instance_forest_accuracy(bags, n_folds: int, n_trees: int) -> dict[str, float]:
    """Bag accuracy (%) of MIRF and of the instance forest on the same folds (seed 0), fold ``i`` seeding both
    forests with ``i``; binary bags: positive when the best instance's positive probability exceeds 0.5."""
    predicted = {"mirf": np.empty_like(bags.y), "forest": np.empty_like(bags.y)}
    for fold, (train, test) in enumerate(automil.fold_splits(automil.bag_folds(bags.y, n_folds, 0))):
        fit_on, scored = bags.subset(train), bags.subset(test)
        predicted["mirf"][test] = MIRFClassifier(n_trees, random_state=fold, n_jobs=1).fit(fit_on).predict(scored)
        forest = RandomForestClassifier(n_trees, max_features=resolve_max_features("sqrt", fit_on.n_features),
                                        random_state=fold, n_jobs=1)
        forest.fit(fit_on.X, np.repeat(fit_on.y, fit_on.sizes))
        best = automil.bag_max(scored.offsets, forest.predict_proba(scored.X))[0]
        predicted["forest"][test] = forest.classes_[(best[:, 1] > 0.5).astype(int)]
    return {name: 100 * float(np.mean(labels == bags.y)) for name, labels in predicted.items()}
