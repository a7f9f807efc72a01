"""How one epoch of a deep learner grows with the instances: CPU seconds of an epoch on growing fractions of
a set's bags (whole bags, so bag sizes stay), and the slope of log(seconds) against log(instances); with
``--max-instances``, the same for each cap on the instances a training step sees of a bag.

    OMP_NUM_THREADS=1 python benchmarks/deep_epoch_scaling.py DATA [--learners abmil ...] [--epochs 2]
                                                             [--fractions 0.125 0.25 0.5 1]
                                                             [--max-instances none 512 128 ...]
                                                             [--validation-fraction 0.2]

Each cell fits the learner's defaults for ``--epochs`` epochs with nothing held out and divides its CPU
seconds (one thread: the wall time on an idle core) by the epochs; the first fit of the process, which
imports torch, is left out. With ``--validation-fraction``, that share of the bags is held out for early
stopping and scored after every epoch, all epochs run, and the refit on all the bags follows: a cell is then
the fit's seconds per epoch, an epoch with its held-out pass plus one of the refit. A slope of 1 is linear.
The last column divides the epoch on all the bags by the instances its steps saw (each bag's size, at most
the cap): an epoch costs in proportion to them when it stays the same from cap to cap. Prints a markdown
table for docs/deep.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import automil


def epoch_seconds(learner: str, bags, epochs: int, max_instances: int | None = None,
                  validation_fraction: float = 0.0) -> float:
    """CPU seconds of a fit per epoch; with held-out bags every epoch runs (``min_epochs``), each with its
    held-out pass, and the refit on all the bags adds its own ``epochs`` epochs."""
    estimator = automil.get_learner(learner).build(epochs=epochs, validation_fraction=validation_fraction,
                                                   min_epochs=epochs, max_instances=max_instances, random_state=0)
    start = time.process_time()
    estimator.fit(bags)
    return (time.process_time() - start) / epochs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--learners", nargs="+", default=["abmil"])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.125, 0.25, 0.5, 1.0])
    parser.add_argument("--max-instances", nargs="+", default=[None], type=_cap,
                        help="caps to compare ('none': every instance)")
    parser.add_argument("--validation-fraction", type=float, default=0.0,
                        help="bags held out for early stopping (0: none)")
    args = parser.parse_args()
    bags = automil.load_bags(args.data)
    order = np.random.default_rng(0).permutation(bags.n_bags)
    subsets = [bags.subset(np.sort(order[:max(4, int(f * bags.n_bags))])) for f in args.fractions]
    epoch_seconds(args.learners[0], subsets[0].subset(np.arange(4)), 1, args.max_instances[0])  # imports torch
    sizes = [s.n_instances for s in subsets]
    print("| learner | max_instances | " + " | ".join(f"{n:,} instances" for n in sizes)
          + " | log-log slope | µs per instance seen |")
    print("|---|---:|" + "---:|" * (len(sizes) + 2))
    sizes_all = np.diff(subsets[-1].offsets)
    for learner in args.learners:
        for cap in args.max_instances:
            seconds = [epoch_seconds(learner, subset, args.epochs, cap, args.validation_fraction)
                       for subset in subsets]
            slope = f"{np.polyfit(np.log(sizes), np.log(seconds), 1)[0]:.2f}" if len(sizes) > 1 else "-"
            seen = sizes_all.sum() if cap is None else np.minimum(sizes_all, cap).sum()
            print(f"| {learner} | {cap or 'all'} | " + " | ".join(f"{t:.2f} s" for t in seconds)
                  + f" | {slope} | {1e6 * seconds[-1] / seen:.1f} |", flush=True)


def _cap(text: str) -> int | None:
    return None if text.lower() == "none" else int(text)

if __name__ == "__main__":
    main()
