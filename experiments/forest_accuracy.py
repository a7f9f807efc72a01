"""Accuracy of the forest learners with default parameters: one stratified 10-fold CV over bags (seed 0),
instances standardized on the training folds (docs/algorithms.md 1.5), on the five classic MIL sets.

    python experiments/forest_accuracy.py [--learners mirf blrt midf] [--datasets musk1 ...]

prints a markdown table (mean accuracy in %, standard deviation over folds) for docs/accuracy-forests.md.
The accuracy test (tests/plugins/test_forests_accuracy.py) uses the same protocol through ``cv_accuracy``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import automil
from automil import Bags
from automil.evaluation.cross_validation import cross_validated_predictions

DATASETS = ("musk1", "musk2", "elephant", "fox", "tiger")
LEARNERS = ("mirf", "blrt", "midf")
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def load(name: str) -> Bags:
    """A benchmark set through the dataset plugin (the shared data directory unless AUTOMIL_DATA_DIR)."""
    os.environ.setdefault("AUTOMIL_DATA_DIR", str(SHARED_DATA))
    return automil.load_bags(name)


def cv_accuracy(learner: str, bags: Bags, n_folds: int = 10, seed: int = 0, **params) -> np.ndarray:
    """Per-fold accuracy of the registered learner with its defaults (plus ``params``) under the core's
    fixed-parameter protocol (``cross_validated_predictions``)."""
    estimator = automil.get_learner(learner).build(random_state=seed, **params)
    predicted, folds, _ = cross_validated_predictions(estimator, bags, n_folds, seed)
    return np.array([np.mean(predicted[folds == f] == bags.y[folds == f]) for f in range(n_folds)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", nargs="+", default=list(LEARNERS))
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    data = {name: load(name) for name in args.datasets}
    print("| learner | " + " | ".join(args.datasets) + " | time (s) |")
    print("|---|" + "---|" * (len(args.datasets) + 1))
    for learner in args.learners:
        start = time.perf_counter()
        cells = []
        for name in args.datasets:
            scores = cv_accuracy(learner, data[name], n_jobs=args.n_jobs)
            cells.append(f"{100 * scores.mean():.1f} ± {100 * scores.std():.1f}")
        print(f"| {learner} | " + " | ".join(cells) + f" | {time.perf_counter() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
