"""pdMISVM on SIVAL-shaped data (docs/published.md, section 4): one iteration against its memory-traffic floor,
and the inexact fit of SIVAL-25-deep's shape.

Run: python benchmarks/pdmisvm_sival.py [iteration|deep ...]

``iteration`` (SIVAL-25 shape: 1,500 bags x 31 instances, 30 features, 25 classes). The time of one iteration
is the difference between fits of FEW and MANY iterations (``tol`` below reach), divided by MANY - FEW, so
set-up is excluded. Its floor is the bytes one iteration must move, divided by the bandwidth ``np.copyto``
reaches on a 256 MB array in the same run (bytes read + written per second, best of 8 runs of 5 copies;
wall-clock figures use the wall-clock bandwidth, CPU figures the CPU-time one, so that time the process
spends descheduled on a shared machine counts in neither or both): X once, plus every ``n_instances x K``
array once for each direction it is accessed. Exact: G (written by X W, read by the
sweep), M (written by the sweep, read by X^T M), T, U, Theta, Xi (read and written): 12 arrays. Inexact: M
(2), XG = X g (written, read twice: norms and sweep, 3), G, T, U, Theta, Xi (read and written, 10): 15.
Target: ratio <= 4.

``deep`` (SIVAL-25-deep shape: 1,463 bags, 80,561 instances, 4,096 features, 25 classes, about 2.6 GB of
float64 instances): the inexact fit with DEEP_ITERATIONS iterations; prints its time and the peak resident
memory of the process (``resource.getrusage``).
"""

from __future__ import annotations

import os
import resource
import sys
import time

import numpy as np

from automil import Bags
from automil_pdmisvm.linear import InexactPdMISVMClassifier, PdMISVMClassifier

FEW, MANY = 20, 220
DEEP_ITERATIONS = 30
ARRAY_PASSES = {"exact": 12, "inexact": 15}


def sival_shaped(n_bags, n_instances, n_features, n_classes, seed=0) -> Bags:
    """Gaussian instances in bags of (nearly) equal size; each bag's first instance is shifted along the
    feature of its class, so the classes are learnable (content does not matter for timing)."""
    rng = np.random.default_rng(seed)
    sizes = np.full(n_bags, n_instances // n_bags)
    sizes[: n_instances - sizes.sum()] += 1
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    y = np.arange(n_bags) % n_classes
    X = rng.standard_normal((n_instances, n_features))
    X[offsets[:-1], y % n_features] += 3.0
    return Bags(X, offsets, y)


def copy_bandwidth(samples: int = 8, copies: int = 5) -> tuple[float, float]:
    """Bytes read plus written per second by np.copyto on a 256 MB float64 array: the best of ``samples``
    runs of ``copies`` copies each (long enough for CPU-time accounting to be exact), by wall time and by
    this process's CPU time (the machine is shared: the best sample is the one least disturbed)."""
    src = np.random.default_rng(0).standard_normal(2**25)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    wall = cpu = np.inf
    for _ in range(samples):
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(copies):
            np.copyto(dst, src)
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return 2 * copies * src.nbytes / wall, 2 * copies * src.nbytes / cpu


def timed_fit(cls, bags, maxiter):
    model = cls(maxiter=maxiter, tol=1e-300)
    start, start_cpu = time.perf_counter(), time.process_time()
    model.fit(bags)
    seconds = time.perf_counter() - start, time.process_time() - start_cpu
    assert model.n_iter_ == maxiter, model.n_iter_
    return seconds


def iteration() -> None:
    bags = sival_shaped(1500, 1500 * 31, 30, 25)
    n, K = bags.n_instances, 25
    bandwidth = copy_bandwidth()
    print(f"SIVAL-25 shape: {bags}; copy bandwidth {bandwidth[0] / 1e9:.1f} GB/s (wall), "
          f"{bandwidth[1] / 1e9:.1f} GB/s (CPU); load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    print("| variant | iteration ms (wall) | iteration ms (CPU) | floor ms (wall) | floor ms (CPU) | ratio (wall) "
          "| ratio (CPU) |")
    print("|---|---|---|---|---|---|---|")
    for name, cls in (("exact", PdMISVMClassifier), ("inexact", InexactPdMISVMClassifier)):
        timed_fit(cls, bags, 2)  # compile or load the kernels
        few = min((timed_fit(cls, bags, FEW) for _ in range(3)), key=lambda t: t[0])
        many = min((timed_fit(cls, bags, MANY) for _ in range(3)), key=lambda t: t[0])
        per_iteration = [(m - f) / (MANY - FEW) for m, f in zip(many, few)]
        traffic = bags.X.nbytes + ARRAY_PASSES[name] * n * K * 8
        floor = [traffic / bandwidth[0], traffic / bandwidth[1]]
        print(f"| {name} | {1e3 * per_iteration[0]:.2f} | {1e3 * per_iteration[1]:.2f} | {1e3 * floor[0]:.2f} | "
              f"{1e3 * floor[1]:.2f} | {per_iteration[0] / floor[0]:.2f} | {per_iteration[1] / floor[1]:.2f} |",
              flush=True)


def deep() -> None:
    start = time.perf_counter()
    bags = sival_shaped(1463, 80561, 4096, 25)
    made = time.perf_counter() - start
    print(f"SIVAL-25-deep shape: {bags}; instances {bags.X.nbytes / 2**30:.2f} GiB, made in {made:.1f} s; "
          f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    model = InexactPdMISVMClassifier(maxiter=DEEP_ITERATIONS, tol=1e-300)
    start, start_cpu = time.perf_counter(), time.process_time()
    model.fit(bags)
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux -> GiB
    print(f"inexact fit, {model.n_iter_} iterations: {wall:.1f} s wall, {cpu:.1f} s CPU "
          f"({wall / model.n_iter_:.2f} s per iteration incl. set-up); peak resident memory {peak:.2f} GiB")


if __name__ == "__main__":
    parts = sys.argv[1:] or ["iteration", "deep"]
    if "iteration" in parts:
        iteration()
    if "deep" in parts:
        deep()
