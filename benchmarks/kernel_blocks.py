"""Seconds and peak memory of a bag Gram matrix reduced from the RBF instance kernel in blocks
(``automil.kernels.combination_gram``, NSK's and miGraph's kernel), against the same reduction in whole-array
numpy steps: distances as ``-2 x.y + |x|^2 + |y|^2`` with a temporary of the block's size for the norms'
sum and a mask, and the block reduced as ``(R @ K.T).T``, 2,048 rows a block.

Bags of 280 standard-normal instances of 64 features (the 10^5-instance sets' bags of experiments/scale.py),
every bag against every bag, float64; peak memory is ``tracemalloc``'s (numpy's allocations).

    python benchmarks/kernel_blocks.py [--bags 45 91 182]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
import scipy.sparse as sp

from automil import kernels

INSTANCES_PER_BAG = 280
FEATURES = 64
NUMPY_BLOCK_ROWS = 2048


def numpy_steps_gram(X, R, gamma: float) -> np.ndarray:
    """The reduction in whole-array numpy steps (the baseline)."""
    R = sp.csr_matrix(R)
    R_cols = R.tocsc()
    norms = np.einsum("ij,ij->i", X, X)
    G = np.zeros((R.shape[0], R.shape[0]))
    for lo in range(0, X.shape[0], NUMPY_BLOCK_ROWS):
        hi = min(lo + NUMPY_BLOCK_ROWS, X.shape[0])
        K = X[lo:hi] @ X.T
        K *= -2.0
        scale = norms[lo:hi, None] + norms[None, :]
        K += scale
        K[K <= 1e-12 * scale] = 0.0
        K *= -gamma
        np.exp(K, out=K)
        G += R_cols[:, lo:hi] @ (R @ K.T).T
    return G


def measure(function) -> tuple[float, float, np.ndarray]:
    """Seconds and peak MB of one call."""
    tracemalloc.start()
    started = time.perf_counter()
    result = function()
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak, result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bags", type=int, nargs="+", default=[45, 91, 182])
    args = parser.parse_args(argv)
    gamma = 1.0 / FEATURES
    warm = np.random.default_rng(1).standard_normal((20, FEATURES))
    kernels.combination_gram(warm, kernels.bag_matrix(np.array([0, 10, 20])), kernel="rbf", gamma=gamma)  # compile
    print("| bags | instances | blocks s | numpy steps s | ratio | blocks peak MB | numpy steps peak MB | ratio |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n_bags in args.bags:
        X = np.random.default_rng(0).standard_normal((n_bags * INSTANCES_PER_BAG, FEATURES))
        R = kernels.bag_matrix(np.arange(0, len(X) + 1, INSTANCES_PER_BAG))
        s_new, m_new, G_new = measure(lambda: kernels.combination_gram(X, R, kernel="rbf", gamma=gamma))
        s_old, m_old, G_old = measure(lambda: numpy_steps_gram(X, R, gamma))
        assert np.allclose(G_new, G_old, rtol=1e-10), "the two reductions disagree"
        print(f"| {n_bags} | {len(X):,} | {s_new:.1f} | {s_old:.1f} | {s_old / s_new:.1f} | {m_new:,.0f} | "
              f"{m_old:,.0f} | {m_old / m_new:.1f} |", flush=True)


if __name__ == "__main__":
    main()
