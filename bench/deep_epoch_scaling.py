"""How one epoch of a deep learner grows with the instances: CPU seconds of an epoch on growing fractions of
a set's bags (whole bags, so bag sizes stay), and the slope of log(seconds) against log(instances).

    OMP_NUM_THREADS=1 python bench/deep_epoch_scaling.py DATA [--learners abmil ...] [--epochs 2]
                                                             [--fractions 0.125 0.25 0.5 1]

Each cell fits the learner's defaults with nothing held out for ``--epochs`` epochs and divides its CPU
seconds (one thread: the wall time on an idle core) by the epochs; the first fit of the process, which
imports torch, is left out. A slope of 1 is linear. Prints a markdown table for docs/deep.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import automil


def epoch_seconds(learner: str, bags, epochs: int) -> float:
    estimator = automil.get_learner(learner).build(epochs=epochs, validation_fraction=0.0, random_state=0)
    start = time.process_time()
    estimator.fit(bags)
    return (time.process_time() - start) / epochs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--learners", nargs="+", default=["abmil"])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.125, 0.25, 0.5, 1.0])
    args = parser.parse_args()
    bags = automil.load_bags(args.data)
    order = np.random.default_rng(0).permutation(bags.n_bags)
    subsets = [bags.subset(np.sort(order[:max(4, int(f * bags.n_bags))])) for f in args.fractions]
    epoch_seconds(args.learners[0], subsets[0].subset(np.arange(4)), 1)  # imports torch
    sizes = [s.n_instances for s in subsets]
    print("| learner | " + " | ".join(f"{n:,} instances" for n in sizes) + " | log-log slope |")
    print("|---|" + "---:|" * (len(sizes) + 1))
    for learner in args.learners:
        seconds = [epoch_seconds(learner, subset, args.epochs) for subset in subsets]
        slope = np.polyfit(np.log(sizes), np.log(seconds), 1)[0]
        print(f"| {learner} | " + " | ".join(f"{t:.2f} s" for t in seconds) + f" | {slope:.2f} |", flush=True)


if __name__ == "__main__":
    main()
