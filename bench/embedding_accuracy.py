"""Accuracy of the embedded-space learners with their defaults against the hand-made baseline a MIL user
writes (per-bag mean, max and min of the instances + a 300-tree scikit-learn RandomForest, untuned), on
the same folds: one stratified 6-fold CV over bags (``automil.bag_folds(y, 6, seed)``), balanced accuracy.

    python bench/embedding_accuracy.py [--learners bag-stats miles mivlad mifv] [--datasets musk1 ...]
                                       [--seed 0] [--no-baseline]

The learners run under the core's fixed-parameter protocol (``cross_validated_predictions``: instances
standardized on the training folds); the baseline sees the raw instances, as its user would (a forest is
blind to the affine rescaling anyway). Prints a markdown table for docs/accuracy-embedding.md.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import balanced_accuracy_score

import automil
from automil import Bags
from automil.evaluation import cross_validated_predictions

DATASETS = ("musk1", "elephant", "fox", "tiger", "musk2")
LEARNERS = ("bag-stats", "miles", "mivlad", "mifv")
N_FOLDS = 6
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def load(name: str) -> Bags:
    """A benchmark set through the dataset plugin (the shared data directory unless AUTOMIL_DATA_DIR)."""
    os.environ.setdefault("AUTOMIL_DATA_DIR", str(SHARED_DATA))
    return automil.load_bags(name)


def per_fold(predicted, folds, y) -> np.ndarray:
    return np.array([balanced_accuracy_score(y[folds == f], predicted[folds == f]) for f in np.unique(folds)])


def cv_balanced_accuracy(learner: str, bags: Bags, seed: int = 0, n_folds: int = N_FOLDS, **params) -> np.ndarray:
    """Per-fold balanced accuracy of the registered learner with its defaults (plus ``params``)."""
    estimator = automil.get_learner(learner).build(**{"random_state": seed, **params})
    predicted, folds, _ = cross_validated_predictions(estimator, bags, n_folds, seed)
    return per_fold(predicted, folds, bags.y)


def baseline_balanced_accuracy(bags: Bags, seed: int = 0, n_folds: int = N_FOLDS) -> np.ndarray:
    """The five lines a user writes: mean/max/min per bag, RandomForestClassifier(300), same folds."""
    starts = bags.offsets[:-1]
    Z = np.hstack((np.add.reduceat(bags.X, starts) / bags.sizes[:, None], np.maximum.reduceat(bags.X, starts),
                   np.minimum.reduceat(bags.X, starts)))
    folds = automil.bag_folds(bags.y, n_folds, seed)
    predicted = np.empty_like(bags.y)
    for train, test in automil.fold_splits(folds):
        forest = RandomForestClassifier(n_estimators=300, random_state=seed).fit(Z[train], bags.y[train])
        predicted[test] = forest.predict(Z[test])
    return per_fold(predicted, folds, bags.y)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", nargs="+", default=list(LEARNERS))
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-baseline", action="store_true", help="only the learners' rows")
    args = parser.parse_args()
    data = {name: load(name) for name in args.datasets}
    print(f"balanced accuracy (%), {N_FOLDS}-fold CV over bags, seed {args.seed}, mean ± std over folds")
    print("| learner | " + " | ".join(args.datasets) + " | time (s) |")
    print("|---|" + "---|" * (len(args.datasets) + 1))
    rows = [] if args.no_baseline else [
        ("mean/max/min + RF(300), untuned", lambda bags: baseline_balanced_accuracy(bags, args.seed))]
    rows += [(name, lambda bags, name=name: cv_balanced_accuracy(name, bags, args.seed)) for name in args.learners]
    for label, evaluate in rows:
        start = time.perf_counter()
        cells = [f"{100 * s.mean():.1f} ± {100 * s.std():.1f}" for s in (evaluate(data[n]) for n in args.datasets)]
        print(f"| {label} | " + " | ".join(cells) + f" | {time.perf_counter() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
