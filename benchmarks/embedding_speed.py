"""Fit time of miVLAD and miFV (defaults) against the number of instances, on the synthetic generator
(plugins/automil_datasets/synthetic.py, 10 features, 2 classes, 3 to 5 instances per bag), with the
log-log slope of time over instances and the ratio to bag-stats with a linear classifier (linear SVM on
mean/max/min) on the same bags.

    python benchmarks/embedding_speed.py [--n-bags 1000 3000 10000 30000 100000] [--repeats 3]

Each time is the best of ``--repeats`` fits (the machine is shared: the minimum is the least disturbed).
Prints a markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import automil
from automil_datasets.synthetic import make_synthetic_bags

LEARNERS = {"mivlad": {}, "mifv": {},
            "bag-stats (linear-svm)": {"statistics": ("mean", "max", "min"), "classifier": "linear-svm"}}
REFERENCE = "bag-stats (linear-svm)"


def fit_seconds(name: str, params: dict, bags, repeats: int) -> float:
    spec = automil.get_learner(name.split()[0])
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        spec.build(**params).fit(bags)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-bags", nargs="+", type=int, default=[1000, 3000, 10000, 30000, 100000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    fit_seconds("mivlad", {}, make_synthetic_bags(200), 1)  # imports and numba caches out of the timings
    instances, times = [], {name: [] for name in LEARNERS}
    print("| bags | instances | " + " | ".join(f"{name} (s)" for name in LEARNERS) + " | mivlad / ref | mifv / ref |")
    print("|---|---|" + "---|" * (len(LEARNERS) + 2))
    for n_bags in args.n_bags:
        bags = make_synthetic_bags(n_bags, seed=1)
        instances.append(bags.n_instances)
        for name, params in LEARNERS.items():
            times[name].append(fit_seconds(name, params, bags, args.repeats))
        ref = times[REFERENCE][-1]
        cells = " | ".join(f"{times[name][-1]:.3f}" for name in LEARNERS)
        print(f"| {n_bags} | {bags.n_instances} | {cells} | {times['mivlad'][-1] / ref:.2f} | "
              f"{times['mifv'][-1] / ref:.2f} |", flush=True)
    for name in LEARNERS:
        slope = np.polyfit(np.log(instances), np.log(times[name]), 1)[0]
        print(f"log-log slope of fit time over instances, {name}: {slope:.2f}")


if __name__ == "__main__":
    main()
