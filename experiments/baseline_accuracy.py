"""Citation-kNN and miGraph at their defaults on the five classic sets: one stratified 10-fold CV over bags
(seed 0), bag accuracy %, beside the papers' figures. Instances standardized on the training folds as the
driver does; Citation-kNN also on the raw features, its paper's protocol.

    python experiments/baseline_accuracy.py [--datasets musk1 musk2 elephant fox tiger]
"""

from __future__ import annotations

import argparse

import numpy as np

import automil
from automil.evaluation.cross_validation import cross_validated_predictions

ROWS = (("citation-knn", True), ("citation-knn", False), ("migraph", True))


def accuracy(learner: str, bags, standardize: bool) -> float:
    predicted = cross_validated_predictions(automil.get_learner(learner).build(), bags, standardize=standardize)[0]
    return 100.0 * float(np.mean(predicted == bags.y))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["musk1", "musk2", "elephant", "fox", "tiger"])
    args = parser.parse_args()
    print("| learner | features | " + " | ".join(args.datasets) + " |")
    print("|---|---|" + "---|" * len(args.datasets))
    data = {name: automil.load_bags(name) for name in args.datasets}
    for learner, standardize in ROWS:
        published = automil.get_learner(learner).published.accuracy
        cells = [f"{accuracy(learner, data[name], standardize):.1f}"
                 + (f" ({published[name]})" if name in published else "") for name in args.datasets]
        print(f"| {learner} | {'standardized' if standardize else 'raw'} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
