"""Instance AUC and witness precision of learners at their defaults on a dataset with instance labels, over
one stratified 10-fold cross-validation (seed 0): the held-out folds' mean and standard deviation.

    python experiments/instance_auc.py synthetic pdmisvm pdmisvm-inexact
"""

import sys

import numpy as np

import automil
from automil.evaluation.instance_metrics import instance_fold
from automil.evaluation.standardized import Standardized


def main(dataset: str, learners: list[str]) -> None:
    bags = automil.load_bags(dataset)
    folds = automil.bag_folds(bags.y, 10, 0)
    for name in learners:
        figures = []
        for train, test in automil.fold_splits(folds):
            model = Standardized(automil.get_learner(name).build()).fit(bags.subset(train))
            figures.append(instance_fold(model, bags.subset(test)))
        auc = [f.instance_auc for f in figures if f and f.instance_auc is not None]
        precision = [f.witness_precision for f in figures if f and f.witness_precision is not None]
        print(f"{name:18s} instance AUC {100 * np.mean(auc):5.1f} ± {100 * np.std(auc):4.1f}   "
              f"witness precision {100 * np.mean(precision):5.1f} ± {100 * np.std(precision):4.1f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
