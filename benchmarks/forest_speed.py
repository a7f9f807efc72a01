"""Speed of the forests (docs/published.md, section 4): MIRF against scikit-learn's RandomForestClassifier on
the same instances, MIRF fit time against the number of bags, and the gain from a second thread.

    python benchmarks/forest_speed.py [--repeats 3] [--only sklearn|scaling|threads] [--max-bags 4000]

Every figure is the best of ``--repeats`` runs, and each comparison is timed side by side in this one
run: CPU seconds of this process for the one-thread comparisons, wall seconds for the threads (absolute
times on a shared machine are noisy, ratios less so). Prints markdown tables for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from sklearn.ensemble import RandomForestClassifier

from automil import Bags, load_bags
from automil_datasets.synthetic import make_synthetic_bags
from automil_forests.blrt import BLRTClassifier
from automil_forests.forest import resolve_max_features
from automil_forests.mirf import MIRFClassifier

N_TREES = 100
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def best_time(fit, repeats: int, clock=time.process_time) -> float:
    """Best of ``repeats`` runs. One-thread comparisons use the process CPU time, which other jobs on a
    shared machine barely disturb; the thread comparison needs wall time (``time.perf_counter``)."""
    times = []
    for _ in range(repeats):
        start = clock()
        fit()
        times.append(clock() - start)
    return min(times)


def replicated(bags: Bags, times: int) -> Bags:
    """Every bag repeated ``times`` times (same instances, same label)."""
    return bags.subset(np.repeat(np.arange(bags.n_bags), times))


def against_sklearn(name: str, bags: Bags, repeats: int) -> str:
    """MIRF and a random forest on the instances (labels copied from their bags), same trees and
    features per node, one thread each."""
    m = resolve_max_features("sqrt", bags.n_features)
    y_instances = np.repeat(bags.y, bags.sizes)
    mirf = best_time(lambda: MIRFClassifier(N_TREES, random_state=0, n_jobs=1).fit(bags), repeats)
    forest = best_time(lambda: RandomForestClassifier(N_TREES, max_features=m, random_state=0, n_jobs=1)
                       .fit(bags.X, y_instances), repeats)
    return (f"| {name} | {bags.n_bags} | {bags.n_instances} | {bags.n_features} | {m} | {mirf:.2f} | "
            f"{forest:.2f} | {mirf / forest:.2f} |")


def compare_with_sklearn(fox: Bags, repeats: int):
    print(f"### MIRF ({N_TREES} trees, one thread, CPU time) vs scikit-learn RandomForestClassifier on the "
          "instances\n")
    print("| data | bags | instances | features | max_features | MIRF (s) | RandomForest (s) | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    print(against_sklearn("fox", fox, repeats), flush=True)
    synthetic = replicated(make_synthetic_bags(200, seed=0), 20)
    print(against_sklearn("synthetic (200 bags) x 20", synthetic, repeats), flush=True)


def mean_depth(forest, X: np.ndarray) -> float:
    """Mean over trees and instances of the depth of the leaf each instance of ``X`` reaches."""
    feature, threshold, left, right, _, roots = forest
    rows = np.arange(len(X))
    depths = []
    for root in roots:
        node, depth = np.full(len(X), root), np.zeros(len(X))
        while (inner := left[node] >= 0).any():
            go_left = X[rows, np.maximum(feature[node], 0)] <= threshold[node]
            node = np.where(inner, np.where(go_left, left[node], right[node]), node)
            depth += inner
        depths.append(depth.mean())
    return float(np.mean(depths))


def scaling(repeats: int, max_bags: int):
    """Fit time against bags, and the trees' depth, which explains the slope: a fit costs about
    instances x depth, and a tree grown to purity gets deeper as bags are added."""
    print(f"\n### Fit time against bags (synthetic, d = 10, {N_TREES} trees, one thread, CPU time)\n")
    print("| bags | instances | MIRF (s) | RandomForest on the instances (s) | MIRF mean depth | "
          "RandomForest mean depth |")
    print("|---|---|---|---|---|---|")
    sizes, times, depths = [], [], []
    m = resolve_max_features("sqrt", 10)
    for n_bags in 250 * 2 ** np.arange(int(np.log2(max_bags / 250)) + 1):
        bags = make_synthetic_bags(int(n_bags), seed=1)
        y_instances = np.repeat(bags.y, bags.sizes)
        mirf = MIRFClassifier(N_TREES, random_state=0, n_jobs=1)
        forest = RandomForestClassifier(N_TREES, max_features=m, random_state=0, n_jobs=1)
        sizes.append(n_bags)
        times.append((best_time(lambda: mirf.fit(bags), repeats),
                      best_time(lambda: forest.fit(bags.X, y_instances), repeats)))
        depths.append((mean_depth(mirf.forest_, bags.X),
                       float(np.mean([np.mean(tree.decision_path(bags.X).sum(axis=1)) - 1
                                      for tree in forest.estimators_]))))
        print(f"| {n_bags} | {bags.n_instances} | {times[-1][0]:.2f} | {times[-1][1]:.2f} | {depths[-1][0]:.1f} | "
              f"{depths[-1][1]:.1f} |", flush=True)
    slopes = np.polyfit(np.log(sizes), np.log(np.array(times)), 1)[0]
    depth_slopes = np.polyfit(np.log(sizes), np.log(np.array(depths)), 1)[0]
    print(f"\nlog-log slope of fit time against bags: MIRF {slopes[0]:.2f}, RandomForest {slopes[1]:.2f}; "
          f"of mean depth: MIRF {depth_slopes[0]:.2f}, RandomForest {depth_slopes[1]:.2f}")


def threads(fox: Bags, repeats: int):
    print(f"\n### Threads ({N_TREES} trees on fox, wall time; load average {os.getloadavg()[0]:.1f})\n")
    print("| learner | n_jobs=1 (s) | n_jobs=2 (s) | speed-up |")
    print("|---|---|---|---|")
    for kind in (MIRFClassifier, BLRTClassifier):
        one = best_time(lambda k=kind: k(N_TREES, random_state=0, n_jobs=1).fit(fox), repeats, time.perf_counter)
        two = best_time(lambda k=kind: k(N_TREES, random_state=0, n_jobs=2).fit(fox), repeats, time.perf_counter)
        print(f"| {kind.__name__} | {one:.2f} | {two:.2f} | {one / two:.2f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=["sklearn", "scaling", "threads"],
                        help="run one table (threads needs two idle cores to mean anything)")
    parser.add_argument("--max-bags", type=int, default=4000,
                        help="largest size of the scaling table (sizes double from 250)")
    args = parser.parse_args()
    os.environ.setdefault("AUTOMIL_DATA_DIR", str(SHARED_DATA))
    fox = load_bags("fox")
    MIRFClassifier(2).fit(make_synthetic_bags(20))  # compile (or load the numba cache) outside the timings
    BLRTClassifier(2).fit(make_synthetic_bags(20))
    if args.only in (None, "sklearn"):
        compare_with_sklearn(fox, args.repeats)
    if args.only in (None, "scaling"):
        scaling(args.repeats, args.max_bags)
    if args.only in (None, "threads"):
        threads(fox, args.repeats)


if __name__ == "__main__":
    main()
