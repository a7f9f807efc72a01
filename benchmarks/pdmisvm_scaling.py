"""pdMISVM fit time against the number of bags and against the number of features (docs/published.md,
section 4).

Run: python benchmarks/pdmisvm_scaling.py [bags|features ...]

Every fit runs exactly ``ITERATIONS`` iterations (``tol`` is set below reach), so the times compare the cost
of an iteration plus set-up, not how fast a data set happens to converge. Prints wall and CPU seconds (the
CPU time of this process is the steadier figure on a machine shared with other jobs; the load average is
printed) and the log-log slopes of both (least squares over all sizes, and over the largest three sizes,
where fixed per-call overheads no longer dominate). Targets: slope against bags <= 1.1 (both variants);
against features <= 1.1 (inexact).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from automil_datasets.synthetic import make_synthetic_bags
from automil_pdmisvm.linear import InexactPdMISVMClassifier, PdMISVMClassifier

ITERATIONS = 100
VARIANTS = {"exact": PdMISVMClassifier, "inexact": InexactPdMISVMClassifier}


def fit_seconds(cls, bags, repeats: int = 1) -> tuple[float, float]:
    """Best wall and CPU seconds of ``repeats`` fits of exactly ITERATIONS iterations."""
    wall = cpu = np.inf
    for _ in range(repeats):
        model = cls(maxiter=ITERATIONS, tol=1e-300)
        start, start_cpu = time.perf_counter(), time.process_time()
        model.fit(bags)
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
        assert model.n_iter_ == ITERATIONS
    return wall, cpu


def slope(sizes, seconds) -> float:
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def report(axis: str, sizes, rows, top) -> None:
    print(f"load average: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    print(f"| {axis} | instances | {' | '.join(f'{v} wall s | {v} CPU s' for v in VARIANTS)} |")
    print(f"|---|---|{'---|---|' * len(VARIANTS)}")
    for size, (n, times) in zip(sizes, rows):
        print(f"| {size} | {n} | {' | '.join(f'{w:.3f} | {c:.3f}' for w, c in times)} |")
    for v, name in enumerate(VARIANTS):
        for kind, column in (("wall", [t[v][0] for _, t in rows]), ("CPU", [t[v][1] for _, t in rows])):
            print(f"log-log slope, {name}, {kind}: {slope(sizes, column):.2f} over all sizes, "
                  f"{slope(sizes[-top:], column[-top:]):.2f} over the largest {top}")
    print(flush=True)


def against_bags() -> None:
    sizes = [100, 316, 1000, 3162, 10000, 31623, 100000]
    rows = []
    for N in sizes:
        bags = make_synthetic_bags(N, n_features=10, n_classes=2, seed=0)
        rows.append((bags.n_instances, [fit_seconds(cls, bags, repeats=3) for cls in VARIANTS.values()]))
    report("bags (d=10, K=2)", sizes, rows, top=3)


def against_features() -> None:
    sizes = [10, 32, 100, 316, 1000, 2048, 4096]
    rows = []
    for d in sizes:
        bags = make_synthetic_bags(1000, n_features=d, n_classes=2, seed=0)
        rows.append((bags.n_instances, [fit_seconds(cls, bags) for cls in VARIANTS.values()]))
    report("features (N=1000, K=2)", sizes, rows, top=3)


if __name__ == "__main__":
    warm = make_synthetic_bags(20, seed=0)
    for cls in VARIANTS.values():  # compile (or load) the numba kernels outside the timings
        cls(maxiter=2).fit(warm)
    axes = sys.argv[1:] or ["bags", "features"]
    print(f"{ITERATIONS} iterations per fit; BLAS: one thread in the loop (threadpoolctl)\n")
    if "bags" in axes:
        against_bags()
    if "features" in axes:
        against_features()
