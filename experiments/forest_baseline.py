"""MIRF against the instance-level forest it generalizes (issue 14): scikit-learn's RandomForestClassifier
trained on the instances labelled with their bag's label, a bag scored by its best instance (per class,
the maximum over its instances of the instance's class probability; binary: positive when the maximum
positive probability exceeds 0.5), same number of trees and features per node, same folds.

    python experiments/forest_baseline.py [--datasets musk1 elephant fox tiger sival] [--folds 5] [--trees 100]
                                    [--split-weights instances] [--tree instance]

Prints a markdown table: accuracy % (mean over the folds' bags) and fit seconds (CPU of this process,
one thread each) of both, and their differences and ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from forest_accuracy import load  # experiments/ is on sys.path when this script runs
from sklearn.ensemble import RandomForestClassifier

from automil import bag_folds, bag_max, fold_splits
from automil_forests.forest import resolve_max_features
from automil_forests.mirf import MIRFClassifier

DATASETS = ("musk1", "elephant", "fox", "tiger", "sival")


def instance_forest_predict(bags_train, bags_test, n_trees: int, seed: int) -> np.ndarray:
    """The baseline: instances inherit their bag's label; a bag takes each class's best instance."""
    forest = RandomForestClassifier(n_trees, max_features=resolve_max_features("sqrt", bags_train.n_features),
                                    random_state=seed, n_jobs=1)
    forest.fit(bags_train.X, np.repeat(bags_train.y, bags_train.sizes))
    best = bag_max(bags_test.offsets, forest.predict_proba(bags_test.X))[0]
    if best.shape[1] == 2:
        return forest.classes_[(best[:, 1] > 0.5).astype(int)]
    return forest.classes_[np.argmax(best, axis=1)]


def compare(bags, n_folds: int, n_trees: int, **mirf_params):
    """Out-of-fold predictions and summed fit+predict CPU seconds of MIRF and the baseline."""
    predicted = {"mirf": np.empty(bags.n_bags, dtype=bags.y.dtype), "forest": np.empty(bags.n_bags, dtype=bags.y.dtype)}
    seconds = {"mirf": 0.0, "forest": 0.0}
    for fold, (train, test) in enumerate(fold_splits(bag_folds(bags.y, n_folds, 0))):
        a, b = bags.subset(train), bags.subset(test)
        start = time.process_time()
        predicted["mirf"][test] = MIRFClassifier(n_trees, random_state=fold, n_jobs=1, **mirf_params).fit(a).predict(b)
        seconds["mirf"] += time.process_time() - start
        start = time.process_time()
        predicted["forest"][test] = instance_forest_predict(a, b, n_trees, fold)
        seconds["forest"] += time.process_time() - start
    accuracy = {k: 100 * np.mean(v == bags.y) for k, v in predicted.items()}
    return accuracy, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--split-weights", help="MIRF's split_weights (default: MIRF's default)")
    parser.add_argument("--tree", help="MIRF's tree: id3-mi (default) or instance (the baseline's trees on "
                                       "bootstrap samples of bags, MIRF's threshold)")
    args = parser.parse_args()
    mirf_params = {"split_weights": args.split_weights} if args.split_weights else {}
    if args.tree:
        mirf_params["tree"] = args.tree
    print("| data set | MIRF % | instance forest % | difference | MIRF s | forest s | time ratio |")
    print("|---|---|---|---|---|---|---|")
    for name in args.datasets:
        accuracy, seconds = compare(load(name), args.folds, args.trees, **mirf_params)
        print(f"| {name} | {accuracy['mirf']:.1f} | {accuracy['forest']:.1f} | "
              f"{accuracy['mirf'] - accuracy['forest']:+.1f} | {seconds['mirf']:.1f} | {seconds['forest']:.1f} | "
              f"{seconds['mirf'] / seconds['forest']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
