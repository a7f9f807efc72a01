"""Accuracy of the forest learners with default parameters: one stratified 10-fold CV over bags (seed 0),
instances standardized on the training folds (algorithms.md 1.5), on the five classic MIL sets.

    python bench/forest_accuracy.py [--learners mirf blrt midf] [--datasets musk1 ...]

prints a markdown table (mean accuracy in %, standard deviation over folds) for docs/accuracy-forests.md.
The accuracy test (tests/plugins/test_forests_accuracy.py) uses the same protocol through ``cv_accuracy``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold

import automil
from automil import Bags

DATASETS = ("musk1", "musk2", "elephant", "fox", "tiger")
LEARNERS = ("mirf", "blrt", "midf")
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"
# Stand-in reader until the dataset plugin registers these sets: format A (instance, bag, label, features)
# and format B (label, bag id, features) of the data README.
_FILES = {"musk1": "musk1/musk1.data", "musk2": "musk2/musk2.csv", "elephant": "elephant/elephant.data",
          "fox": "fox/fox.data", "tiger": "tiger/tiger.data"}


def load(name: str) -> Bags:
    """The data set through the dataset plugin, or read from the shared directory while it is missing."""
    os.environ.setdefault("AUTOMIL_DATA_DIR", str(SHARED_DATA))
    if name in automil.datasets():
        return automil.load_bags(name)
    path = SHARED_DATA / _FILES[name]
    lines = path.read_text().splitlines()
    if path.suffix == ".csv":
        rows = np.array([line.split(",") for line in lines], dtype=np.float64)
        bag_ids, labels, X = rows[:, 1], rows[:, 0], rows[:, 2:]
    else:
        fields = [line.split(",") for line in lines]
        bag_ids = np.unique([f[1] for f in fields], return_inverse=True)[1]
        labels = np.array([f[2] for f in fields], dtype=np.int64)
        X = np.array([f[3:] for f in fields], dtype=np.float64)
    starts = np.flatnonzero(np.diff(bag_ids, prepend=np.nan) != 0)
    offsets = np.append(starts, len(X))
    return Bags(X, offsets, labels[starts].astype(np.int64), source=name)


def standardize(train: Bags, test: Bags) -> tuple[Bags, Bags]:
    """Instance mean and standard deviation of the training bags applied to both (zero std -> 1)."""
    mean, scale = train.X.mean(axis=0), train.X.std(axis=0)
    scale[scale == 0] = 1.0
    return train.with_instances((train.X - mean) / scale), test.with_instances((test.X - mean) / scale)


def cv_accuracy(learner: str, bags: Bags, n_folds: int = 10, seed: int = 0, **params) -> np.ndarray:
    """Per-fold accuracy of the registered learner with default parameters (plus ``params``)."""
    spec = automil.get_learner(learner)
    folds = StratifiedKFold(n_folds, shuffle=True, random_state=seed).split(np.zeros(bags.n_bags), bags.y)
    scores = []
    for train_idx, test_idx in folds:
        train, test = standardize(bags.subset(train_idx), bags.subset(test_idx))
        model = spec.build(random_state=seed, **params).fit(train)
        scores.append(np.mean(model.predict(test) == test.y))
    return np.array(scores)


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
