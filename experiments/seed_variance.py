"""How much one seed moves a learner, and what averaging seeds gains: each learner's defaults fitted with
several random states on the same three quarters of the bags, each scored (balanced accuracy) on the quarter
held out, then the mean of the first k members' class probabilities scored the same way.

    python experiments/seed_variance.py DATA --learners MI-Net mi-net abmil [--seeds 5] [--split-seed 0]

DATA is anything ``automil.load_bags`` reads; the learners are deep ones (each member trains one network,
``seeds=1``). A learner whose single seeds spread by more than the differences between learners is chosen on
noise; the averaged rows say what its ``seeds`` parameter buys.
"""

import argparse
import time

import numpy as np
from sklearn.metrics import balanced_accuracy_score

from automil import load_bags, plugins


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--learners", nargs="+", required=True)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--split-seed", type=int, default=0)
    args = parser.parse_args()
    bags = load_bags(args.data)
    order = np.random.default_rng(args.split_seed).permutation(bags.n_bags)
    test, train = np.sort(order[:bags.n_bags // 4]), np.sort(order[bags.n_bags // 4:])
    truth = bags.y[test]
    print(f"{bags.n_bags} bags: {len(train)} to fit, {len(test)} held out")
    for name in args.learners:
        spec = plugins.get_learner(name)
        probabilities, scores, seconds = [], [], []
        for seed in range(args.seeds):
            start = time.perf_counter()
            model = spec.build(random_state=seed, seeds=1).fit(bags.subset(train), bags.y[train])  # one network
            seconds.append(time.perf_counter() - start)
            probabilities.append(model.predict_proba(bags.subset(test)))
            scores.append(100 * balanced_accuracy_score(truth, model.classes_[probabilities[-1].argmax(axis=1)]))
            print(f"{name:10s} seed {seed}: {scores[-1]:5.1f} BACC in {seconds[-1]:5.1f} s", flush=True)
        averaged = [100 * balanced_accuracy_score(truth, model.classes_[np.mean(probabilities[:k], axis=0)
                                                                        .argmax(axis=1)])
                    for k in range(1, args.seeds + 1)]
        print(f"{name:10s} one seed {np.mean(scores):5.1f} +- {np.std(scores, ddof=1):4.1f} "
              f"(min {min(scores):.1f}, max {max(scores):.1f}); the first k averaged: "
              + " ".join(f"k={k} {score:.1f}" for k, score in enumerate(averaged, 1)), flush=True)


if __name__ == "__main__":
    main()
