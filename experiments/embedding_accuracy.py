"""Accuracy of the embedded-space learners with their defaults against the hand-made baseline a MIL user
writes (per-bag mean, max and min of the instances + a 300-tree scikit-learn RandomForest, untuned), on
the same folds: one stratified 6-fold CV over bags (``automil.bag_folds(y, 6, seed)``), balanced accuracy.

    python experiments/embedding_accuracy.py [--learners bag-stats miles mivlad mifv] [--datasets musk1 ...]
                                       [--seeds 0 [1 ...]] [--no-baseline]

The learners run under the core's fixed-parameter protocol (``cross_validated_predictions``: instances
standardized on the training folds); the baseline sees the raw instances, as its user would (a forest is
blind to the affine rescaling anyway). Prints a markdown table for docs/accuracy-embedding.md. With several
``--seeds`` (repeated CV: the folds and the forests' seeds change together, the same for every row) a cell is
the mean over the repeats +- their standard deviation, and a last table gives each learner's paired
difference to the baseline (mean over the repeats +- its standard error): one 6-fold CV is a noisy ruler.
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
from automil.evaluation.cross_validation import cross_validated_predictions
from automil.evaluation.metrics import mean_std

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
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--no-baseline", action="store_true", help="only the learners' rows")
    args = parser.parse_args()
    data = {name: load(name) for name in args.datasets}
    over = "folds" if len(args.seeds) == 1 else f"{len(args.seeds)} repeats"
    print(f"balanced accuracy (%), {N_FOLDS}-fold CV over bags, seeds {args.seeds}, mean ± std over {over}")
    print("| learner | " + " | ".join(args.datasets) + " | time (s) |")
    print("|---|" + "---|" * (len(args.datasets) + 1))
    rows = [] if args.no_baseline else [
        ("mean/max/min + RF(300), untuned", lambda bags, seed: baseline_balanced_accuracy(bags, seed))]
    rows += [(name, lambda bags, seed, name=name: cv_balanced_accuracy(name, bags, seed)) for name in args.learners]
    repeat_means = {}  # (row, dataset) -> the CV balanced accuracy of every seed
    for label, evaluate in rows:
        start = time.perf_counter()
        cells = []
        for name in args.datasets:
            folds = [evaluate(data[name], seed) for seed in args.seeds]
            repeat_means[label, name] = np.array([f.mean() for f in folds])
            mean, sd = mean_std(repeat_means[label, name])
            sd = folds[0].std() if len(folds) == 1 else sd  # one repeat: the spread over its folds
            cells.append(f"{100 * mean:.1f} ± {100 * sd:.1f}")
        print(f"| {label} | " + " | ".join(cells) + f" | {time.perf_counter() - start:.0f} |", flush=True)
    if args.no_baseline or len(args.seeds) == 1:
        return
    print("\npaired difference to the baseline (points), mean over the repeats ± standard error")
    print("| learner | " + " | ".join(args.datasets) + " |")
    print("|---|" + "---|" * len(args.datasets))
    baseline = rows[0][0]
    for label, _ in rows[1:]:
        diffs = [mean_std(100 * (repeat_means[label, n] - repeat_means[baseline, n])) for n in args.datasets]
        cells = [f"{mean:+.1f} ± {sd / np.sqrt(len(args.seeds)):.1f}" for mean, sd in diffs]
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
