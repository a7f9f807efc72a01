"""Learning curves of learners' defaults on one bag set: each fitted on growing stratified shares of three
quarters of the bags and scored (balanced accuracy) on the quarter held out, with the fit's seconds.

    python experiments/learning_curve.py DATA --learners MI-SVM abmil [--fractions 0.25 0.5 1] [--seed 0]

DATA is anything ``automil.load_bags`` reads (a name or a file, e.g. a set of ``experiments/scale.py generate``).
The shares are nested (``automil.evaluation.folds.bag_sample``), so each curve adds bags to the last point.
"""

import argparse
import time

import numpy as np
from sklearn.metrics import balanced_accuracy_score

from automil import load_bags, plugins
from automil.evaluation.folds import bag_sample


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--learners", nargs="+", required=True)
    parser.add_argument("--fractions", nargs="+", type=float, default=[1 / 16, 1 / 4, 1 / 2, 1.0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    bags = load_bags(args.data)
    order = np.random.default_rng(args.seed).permutation(bags.n_bags)
    test, train = np.sort(order[:bags.n_bags // 4]), np.sort(order[bags.n_bags // 4:])
    print(f"{'learner':18s} {'bags':>6s} {'BACC':>6s} {'fit s':>7s}   (scored on {len(test)} held-out bags)")
    for name in args.learners:
        spec = plugins.get_learner(name)
        for fraction in args.fractions:
            sample = bag_sample(bags.y, train, fraction, args.seed)
            start = time.perf_counter()
            model = spec.build().fit(bags.subset(sample), bags.y[sample])
            seconds = time.perf_counter() - start
            score = balanced_accuracy_score(bags.y[test], model.predict(bags.subset(test)))
            print(f"{name:18s} {len(sample):6d} {100 * score:6.1f} {seconds:7.1f}", flush=True)


if __name__ == "__main__":
    main()
