"""MIDF's cascade with its defaults (issue 14): the depth it chooses, its accuracy and its fit time
against MIRF's (100 trees), in one stratified CV over bags (seed 0) per data set.

    python experiments/midf_cascade.py [--datasets musk1 elephant fox tiger digits-bags] [--folds 5]
                                 [--vectors out_of_fold|training_mean] [--n-estimators N]

Prints a markdown table: accuracy % of MIDF and MIRF, the depth chosen in every fold (n_layers_), the inner
accuracy of every level tried in the first fold, and the ratio of their summed fit CPU seconds (one thread
each; CPU time, which other jobs on a shared machine disturb less than wall time).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from forest_accuracy import load  # experiments/ is on sys.path when this script runs

from automil import bag_folds, fold_splits
from automil_forests.midf import MIDFClassifier
from automil_forests.mirf import MIRFClassifier

DATASETS = ("musk1", "elephant", "fox", "tiger", "digits-bags")


def timed_fit(estimator, bags):
    start = time.process_time()
    estimator.fit(bags)
    return estimator, time.process_time() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--vectors", default="out_of_fold", help="MIDF's vectors parameter")
    parser.add_argument("--n-estimators", type=int, help="MIDF's trees per forest (default: its default)")
    args = parser.parse_args()
    print("| data set | MIDF % | MIRF % | depths chosen | inner accuracy by level (fold 1) | fit time MIDF / MIRF |")
    print("|---|---|---|---|---|---|")
    for name in args.datasets:
        bags = load(name)
        right = {"midf": 0, "mirf": 0}
        seconds = {"midf": 0.0, "mirf": 0.0}
        depths, first_scores = [], None
        for fold, (train, test) in enumerate(fold_splits(bag_folds(bags.y, args.folds, 0))):
            a, b = bags.subset(train), bags.subset(test)
            midf = MIDFClassifier(vectors=args.vectors, random_state=fold, n_jobs=1)
            if args.n_estimators:
                midf.set_params(n_estimators=args.n_estimators)
            for key, estimator in (("midf", midf),
                                   ("mirf", MIRFClassifier(random_state=fold, n_jobs=1))):
                model, spent = timed_fit(estimator, a)
                seconds[key] += spent
                right[key] += int(np.sum(model.predict(b) == b.y))
                if key == "midf":
                    depths.append(model.n_layers_)
                    first_scores = first_scores if first_scores is not None else model.layer_scores_
        levels = " ".join(f"{100 * s:.1f}" for s in first_scores)
        print(f"| {name} | {100 * right['midf'] / bags.n_bags:.1f} | {100 * right['mirf'] / bags.n_bags:.1f} | "
              f"{' '.join(map(str, depths))} | {levels} | {seconds['midf'] / seconds['mirf']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
