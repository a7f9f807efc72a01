"""Accuracy of the deep learners with their defaults (untuned) on the classic MIL benchmark sets, beside the
figures of the papers: 10-fold CV over bags (``automil.bag_folds(y, 10, seed)``), repeated over seeds.

    OMP_NUM_THREADS=1 python experiments/deep_accuracy.py [--learners abmil ...] [--datasets musk1 elephant ...]
                                                    [--seeds 0 [1 ...]]

Each learner runs under the core's fixed-parameter protocol (``cross_validated_predictions``: instances
standardized on the training folds; the learner then holds out a fifth of the training bags for early
stopping). The seed sets the folds and the learner's ``random_state`` together. A cell is the accuracy (%)
of the pooled out-of-fold predictions, the mean over the seeds +- their standard deviation (with one seed:
+- the standard deviation over the folds), then the paper's figure. Prints a markdown table for
docs/deep.md.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import automil
from automil.evaluation.cross_validation import cross_validated_predictions
from automil.evaluation.metrics import mean_std

N_FOLDS = 10
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"
# Table 1 of Ilse, Tomczak & Welling (2018) and Table 2 of Wang et al. (2018): accuracy (%), 10-fold CV
# repeated 5 times.
PAPER = {
    "abmil": {"musk1": 89.2, "musk2": 85.8, "elephant": 86.8, "fox": 61.5, "tiger": 83.9},
    "mi-net": {"musk1": 88.9, "musk2": 85.8, "elephant": 85.8, "fox": 61.3, "tiger": 82.4},
    "MI-Net": {"musk1": 88.7, "musk2": 85.9, "elephant": 86.2, "fox": 62.2, "tiger": 83.0},
}


def cv_accuracy(learner: str, bags, seed: int) -> tuple[float, np.ndarray]:
    """Accuracy of the pooled out-of-fold predictions, and per fold."""
    estimator = automil.get_learner(learner).build(random_state=seed)
    predicted, folds, _ = cross_validated_predictions(estimator, bags, N_FOLDS, seed)
    right = predicted == bags.y
    return float(right.mean()), np.array([right[folds == f].mean() for f in np.unique(folds)])


def cell(learner: str, bags, seeds) -> str:
    pooled, per_fold = zip(*(cv_accuracy(learner, bags, seed) for seed in seeds))
    mean, sd = mean_std(pooled) if len(seeds) > 1 else (pooled[0], float(np.std(per_fold[0], ddof=1)))
    return f"{100 * mean:.1f} ± {100 * sd:.1f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", nargs="+", default=["abmil"])
    parser.add_argument("--datasets", nargs="+", default=["musk1", "elephant"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    os.environ.setdefault("AUTOMIL_DATA_DIR", str(SHARED_DATA))
    data = {name: automil.load_bags(name) for name in args.datasets}
    over = "the folds" if len(args.seeds) == 1 else f"{len(args.seeds)} repeats"
    print(f"accuracy (%), {N_FOLDS}-fold CV over bags, defaults, seeds {args.seeds}, ± std over {over}; "
          f"paper's figure in brackets")
    print("| learner | " + " | ".join(args.datasets) + " | time (s) |")
    print("|---|" + "---|" * (len(args.datasets) + 1))
    for learner in args.learners:
        start = time.perf_counter()
        cells = []
        for name, bags in data.items():
            paper = PAPER.get(learner, {}).get(name)
            cells.append(cell(learner, bags, args.seeds) + (f" ({paper})" if paper else ""))
        print(f"| {learner} | " + " | ".join(cells) + f" | {time.perf_counter() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
