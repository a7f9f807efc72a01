"""Accuracy of MIRF, BLRT and MIDF with default parameters on the classic MIL sets (docs/accuracy-forests.md).

Protocol: one stratified 10-fold CV over bags (seed 0), instances standardized on the training folds, the
learner's registered defaults. No accuracy is published for these learners on these sets (docs/published.md,
section 2), so each is held to the range of the MIL family (the lowest published figure among the methods of
docs/published.md, section 1), less 3 points for fold noise. MIDF runs on musk1 only here (a full 10-fold MIDF
on all five sets takes minutes); bench/forest_accuracy.py makes the full table.
"""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench_module(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


forest_accuracy = _bench_module("forest_accuracy")

# lowest published accuracy (%) among the methods of docs/published.md, section 1
FAMILY_LOW = {"musk1": 77.9, "musk2": 83.6, "elephant": 77.1, "fox": 57.8, "tiger": 73.0}
# musk2 (6598 instances, the largest of the five) runs on demand (``pytest -m slow``): its MIRF and BLRT
# checks were a minute and a half of the default run.
CASES = [pytest.param(learner, name, marks=[pytest.mark.slow] if name == "musk2" else [])
         for learner in ("mirf", "blrt") for name in FAMILY_LOW] + [("midf", "musk1")]


@pytest.fixture(scope="module")
def datasets(data_dir):
    return {name: forest_accuracy.load(name) for name in FAMILY_LOW}


@pytest.mark.accuracy
@pytest.mark.parametrize(("learner", "dataset"), CASES)
def test_default_accuracy_is_within_the_mil_family_range(learner, dataset, datasets):
    scores = forest_accuracy.cv_accuracy(learner, datasets[dataset], n_jobs=2)
    assert len(scores) == 10
    accuracy = 100 * scores.mean()
    assert accuracy >= FAMILY_LOW[dataset] - 3, f"{learner} on {dataset}: {accuracy:.1f}%"


@pytest.mark.accuracy
def test_mirf_is_at_least_as_accurate_as_the_instance_forest_it_generalizes(datasets):
    # Issue 14: scikit-learn's forest on instances labelled by their bag, a bag scored by its best
    # instance, same trees and folds (bench/forest_baseline.py; docs/accuracy-forests.md). Elephant is
    # where the two differ most (83.5 vs 74.5 measured); the others are within 1.5 points.
    import sys

    sys.modules.setdefault("forest_accuracy", forest_accuracy)  # forest_baseline imports it by name
    accuracy, _ = _bench_module("forest_baseline").compare(datasets["elephant"], n_folds=5, n_trees=100)
    assert accuracy["mirf"] >= accuracy["forest"], accuracy
