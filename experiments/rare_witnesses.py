"""miVLAD's codebook on bags whose witnesses are rare: a few positive instances among 40 to 160.

A generated set of the kind where a bag-mean code stays at chance (a 2-class set with rare witnesses):
instances from four Gaussian clusters in 8 dimensions; a positive bag also holds 1 to 3 witnesses drawn
around a fifth centre; 40 positive and 160 negative bags. It was not used to choose any default: it shows
what a default does on such data. Same protocol as experiments/embedding_accuracy.py (6-fold CV over bags,
balanced accuracy, instances standardized on the training folds).

    python experiments/rare_witnesses.py [--seeds 0 1] [--codewords 1 2 4 8 16]
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import numpy as np

from automil import Bags

_spec = importlib.util.spec_from_file_location("embedding_accuracy", Path(__file__).with_name("embedding_accuracy.py"))
embedding_accuracy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(embedding_accuracy)


def rare_witness_bags(seed: int, n_positive: int = 40, n_negative: int = 160, n_features: int = 8) -> Bags:
    """Bags of 40 to 160 instances from four clusters; a positive bag holds 1 to 3 witnesses of a fifth."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 3.0, (4, n_features))
    witness_centre = rng.normal(0.0, 3.0, n_features)
    labels = rng.permutation(np.r_[np.ones(n_positive, np.int64), np.zeros(n_negative, np.int64)])
    sizes = rng.integers(40, 160, len(labels))
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    X = centres[rng.integers(0, 4, offsets[-1])] + rng.normal(0.0, 1.0, (offsets[-1], n_features))
    instance_y = np.zeros(offsets[-1], np.int64)
    for bag in np.flatnonzero(labels):
        witnesses = offsets[bag] + np.arange(rng.integers(1, 4))
        X[witnesses] = witness_centre + rng.normal(0.0, 0.5, (len(witnesses), n_features))
        instance_y[witnesses] = 1
    return Bags(X, offsets, labels, instance_y=instance_y)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="generator seeds (one set each)")
    parser.add_argument("--codewords", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--C", type=float, default=10.0)
    args = parser.parse_args()
    sets = {seed: rare_witness_bags(seed) for seed in args.seeds}
    print("| miVLAD | " + " | ".join(f"set {seed}" for seed in args.seeds) + " | mean |")
    print("|---|" + "---:|" * (len(args.seeds) + 1))
    for counts in (False, True):
        for k in args.codewords:
            scores = [100 * embedding_accuracy.cv_balanced_accuracy("mivlad", bags, 0, n_codewords=k, C=args.C,
                                                                    counts=counts).mean()
                      for bags in sets.values()]
            cells = " | ".join(f"{s:.1f}" for s in scores)
            print(f"| {k} codeword(s), C = {args.C:g}, counts={counts} | {cells} | {np.mean(scores):.1f} |", flush=True)


if __name__ == "__main__":
    main()
