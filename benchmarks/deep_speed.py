"""Seconds per fit of the deep learners' defaults, the fits ``automil tune`` runs: one per fold of its default
6-fold CV, on a fold's training bags (5/6 of them), one thread (a worker's share with ``--jobs 2`` on 2 cores).

    OMP_NUM_THREADS=1 python benchmarks/deep_speed.py [--learners abmil ...] [--datasets digits-bags musk1 ...]
                                                 [--set name=value ...] [--folds 6] [--fits 6]

A cell is the median over the first ``--fits`` folds of one fit's CPU seconds (one thread: its wall time on an
idle core; CPU time, since the machines this runs on are shared), then the epochs of the first training (until early
stopping) + the second (on all the training bags), the median over the folds. ``--set`` overrides a default
for every learner (``--set hidden=64 --set batch_size=16``), to compare settings. The first fit of the process
imports torch and is left out of the timings. Prints a markdown table for docs/deep.md.
"""

from __future__ import annotations

import argparse
import ast
import os
import time
from pathlib import Path

import numpy as np

import automil

LEARNERS = ["abmil", "mi-net", "MI-Net", "transmil", "dsmil"]
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def fold_fits(learner: str, params: dict, bags, folds: int, fits: int) -> tuple[float, str]:
    """Median CPU seconds of a fit on each of the first ``fits`` folds' training bags, and the median epochs."""
    assignment = automil.bag_folds(bags.y, folds, 0)
    seconds, epochs = [], []
    for fold in range(min(fits, folds)):
        train = bags.subset(np.flatnonzero(assignment != fold))
        estimator = automil.get_learner(learner).build(**params)
        start = time.process_time()
        estimator.fit(train)
        seconds.append(time.process_time() - start)
        epochs.append((len(estimator.validation_loss_), estimator.n_epochs_))
    first, second = np.median(np.array(epochs), axis=0)
    return float(np.median(seconds)), f"{first:.0f}+{second:.0f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", nargs="+", default=LEARNERS)
    parser.add_argument("--datasets", nargs="+", default=["digits-bags", "musk1"])
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE")
    parser.add_argument("--folds", type=int, default=6)
    parser.add_argument("--fits", type=int, default=6)
    args = parser.parse_args()
    os.environ.setdefault("AUTOMIL_DATA_DIR", str(SHARED_DATA))
    params = {name: ast.literal_eval(value) for name, value in (item.split("=", 1) for item in args.set)}
    data = {name: automil.load_bags(name) for name in args.datasets}
    warm_up = next(iter(data.values()))
    automil.get_learner(args.learners[0]).build(epochs=1).fit(warm_up.subset(np.arange(min(20, warm_up.n_bags))))
    print(f"CPU seconds per fit (median of {min(args.fits, args.folds)} of {args.folds} folds' training bags) and "
          f"epochs (early stopping + on all bags), threads {os.environ.get('OMP_NUM_THREADS', 'default')}, "
          f"settings {params or 'defaults'}")
    print("| learner | " + " | ".join(args.datasets) + " |")
    print("|---|" + "---|" * len(args.datasets))
    for learner in args.learners:
        cells = [fold_fits(learner, params, bags, args.folds, args.fits) for bags in data.values()]
        print(f"| {learner} | " + " | ".join(f"{s:.2f} s ({e})" for s, e in cells) + " |", flush=True)


if __name__ == "__main__":
    main()
