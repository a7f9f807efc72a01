"""The kernels every kernel learner shares (docs/algorithms.md 1.7): instance kernels and the set kernel.

Instance kernels take two instance matrices (dense float64, or scipy CSR) and return the dense
``(n_x, n_y)`` kernel matrix. The set kernel scores bags: it sums an instance kernel over all pairs of
instances of two bags and divides by a normalizer of each bag. Large kernel matrices are computed in
row blocks so that memory stays ``O(block * n_y)`` where the caller only needs a reduced result.

Function names are stable: the pdMISVM kernel variant imports :func:`gamma_exponential_kernel`.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from numba import njit

__all__ = [
    "INSTANCE_KERNELS", "NORMALIZATIONS", "linear_kernel", "rbf_kernel", "polynomial_kernel",
    "gamma_exponential_kernel", "squared_distances", "resolve_gamma", "pairwise_kernel", "row_blocks",
    "combination_gram", "bag_matrix", "set_normalizer", "set_kernel",
]

INSTANCE_KERNELS = ("linear", "rbf", "poly")
NORMALIZATIONS = ("none", "averaging", "featurespace")

# Rows of X per block when a kernel matrix is reduced on the fly (block x n_y doubles at a time), at most.
_BLOCK_ROWS = 2048
# Kernel cells per block, at most (128 MiB of float64): a block of 2,048 rows against 51,000 instances held
# 0.8 GB, and as much again for its transposed copy in the reduction.
_BLOCK_CELLS = 2**24


def _dense(A) -> np.ndarray:
    return A.toarray() if sp.issparse(A) else np.asarray(A)


def _row_sq_norms(X) -> np.ndarray:
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


def linear_kernel(X, Y) -> np.ndarray:
    """``k(x, x') = x . x'``."""
    return _dense(X @ Y.T)


def squared_distances(X, Y) -> np.ndarray:
    """``||x - x'||^2`` for all pairs.

    The expansion ``|x|^2 + |x'|^2 - 2 x.x'`` loses about ``eps (|x|^2 + |x'|^2)`` to rounding, so values
    below ``1e-12 (|x|^2 + |x'|^2)`` (including negative ones) are set to 0: a point's distance to itself is
    exactly 0, which matters for kernels with a fractional power of the distance.
    """
    D = linear_kernel(X, Y)
    _products_to_distances(D, _row_sq_norms(X), _row_sq_norms(Y))
    return D


@njit(cache=True, nogil=True)
def _products_to_distances(D, x_norms, y_norms):
    """In place, ``D[i, j] = x_norms[i] + y_norms[j] - 2 D[i, j]``, 0 where below ``1e-12`` of the norms'
    sum. One pass over ``D``: the same values as whole-array numpy steps, which made four passes and two
    temporaries of ``D``'s size and took 30 times the product's BLAS time (2,048 x 51,000 x 64)."""
    for i in range(D.shape[0]):
        for j in range(D.shape[1]):
            scale = x_norms[i] + y_norms[j]
            d = -2.0 * D[i, j] + scale
            D[i, j] = d if d > 1e-12 * scale else 0.0


def rbf_kernel(X, Y, gamma: float) -> np.ndarray:
    """``k(x, x') = exp(-gamma ||x - x'||^2)``."""
    K = squared_distances(X, Y)
    K *= -gamma
    return np.exp(K, out=K)


def polynomial_kernel(X, Y, degree: int = 3, coef0: float = 1.0) -> np.ndarray:
    """``k(x, x') = (coef0 + x . x')^degree``; misvm's polynomial kernel is ``coef0 = 1``."""
    K = linear_kernel(X, Y)
    K += coef0
    return np.power(K, degree, out=K)


def gamma_exponential_kernel(X, Y, gamma: float = 2.0, length_scale: float = 1.0) -> np.ndarray:
    """``k(x, x') = exp(-(||x - x'|| / length_scale)^gamma)`` with ``0 < gamma <= 2`` (docs/algorithms.md 3.1).

    ``gamma`` is an exponent, not a bandwidth: ``gamma = 2`` with ``length_scale = 1`` is the Gaussian
    ``exp(-||x - x'||^2)`` of the pdMISVM kernel code.
    """
    if not 0.0 < gamma <= 2.0:
        raise ValueError(f"gamma-exponential kernel: gamma must be in (0, 2], got {gamma!r}")
    if not length_scale > 0.0:
        raise ValueError(f"gamma-exponential kernel: length_scale must be positive, got {length_scale!r}")
    K = squared_distances(X, Y)
    # (d^2 / l^2)^(gamma/2) = (d / l)^gamma, without a square root.
    K *= 1.0 / (length_scale * length_scale)
    np.power(K, 0.5 * gamma, out=K)
    K *= -1.0
    return np.exp(K, out=K)


def resolve_gamma(gamma, n_features: int) -> float:
    """The RBF width: ``"auto"`` is ``1 / n_features`` (automil's default, docs/algorithms.md 1.7)."""
    if isinstance(gamma, str):
        if gamma != "auto":
            raise ValueError(f"gamma must be a positive number or 'auto', got {gamma!r}")
        return 1.0 / n_features
    gamma = float(gamma)
    if not gamma > 0.0 or not np.isfinite(gamma):
        raise ValueError(f"gamma must be a positive number or 'auto', got {gamma!r}")
    return gamma


def pairwise_kernel(X, Y, kernel: str = "linear", *, gamma="auto", degree: int = 3) -> np.ndarray:
    """The instance kernel ``kernel`` in ``{"linear", "rbf", "poly"}`` between the rows of X and Y."""
    if kernel == "linear":
        return linear_kernel(X, Y)
    if kernel == "rbf":
        return rbf_kernel(X, Y, resolve_gamma(gamma, X.shape[1]))
    if kernel == "poly":
        return polynomial_kernel(X, Y, degree)
    raise ValueError(f"unknown kernel {kernel!r}; choose one of {', '.join(INSTANCE_KERNELS)}")


def row_blocks(n_rows: int, n_cols: int):
    """Ranges of rows of an ``n_rows x n_cols`` kernel matrix, each of at most :data:`_BLOCK_ROWS` rows and
    :data:`_BLOCK_CELLS` cells (one row at least)."""
    block = max(1, min(_BLOCK_ROWS, _BLOCK_CELLS // max(n_cols, 1)))
    return ((lo, min(lo + block, n_rows)) for lo in range(0, n_rows, block))


def combination_gram(X, R_a, Y=None, R_b=None, *, kernel="linear", gamma="auto", degree=3) -> np.ndarray:
    """``R_a k(X, Y) R_b^T``: the kernel between linear combinations of instances, shape ``(m_a, m_b)``.

    Row ``r`` of ``R_a`` (sparse, ``m_a x n_x``) describes one example as a weighted sum of the rows of X
    (a bag sum, a bag mean, a single instance). The instance kernel is computed in row blocks of X and
    reduced at once, so the full ``n_x x n_y`` matrix is never held.
    """
    if Y is None:
        Y, R_b = X, R_a
    R_a, R_b = sp.csr_matrix(R_a), sp.csr_matrix(R_b)
    if kernel == "linear":  # (R_a X)(R_b Y)^T: the explicit features are cheaper than any Gram.
        return linear_kernel(R_a @ X, R_b @ Y)
    R_a_cols = R_a.tocsc()
    G = np.zeros((R_a.shape[0], R_b.shape[0]))
    for lo, hi in row_blocks(X.shape[0], Y.shape[0]):
        K_block = pairwise_kernel(X[lo:hi], Y, kernel, gamma=gamma, degree=degree)
        G += R_a_cols[:, lo:hi] @ _combine_columns(K_block, R_b.indptr, R_b.indices, R_b.data)
    return G


@njit(cache=True, nogil=True)
def _combine_columns(K, indptr, indices, data):
    """``K @ R.T`` for the CSR matrix ``R`` (``indptr``, ``indices``, ``data``): each row of K combined as
    every row of R combines columns, reading K row by row. Why: scipy's ``(R @ K.T).T`` first copies K
    transposed, which took five times the rest of the reduction."""
    out = np.zeros((K.shape[0], len(indptr) - 1))
    for i in range(K.shape[0]):
        for m in range(len(indptr) - 1):
            total = 0.0
            for k in range(indptr[m], indptr[m + 1]):
                total += data[k] * K[i, indices[k]]
            out[i, m] = total
    return out


def bag_matrix(offsets, weights=None, n_instances: int | None = None) -> sp.csr_matrix:
    """The sparse ``(n_bags, n_instances)`` matrix whose row i holds ``weights[i]`` on bag i's instances
    (1 by default): ``bag_matrix(offsets) @ X`` are the bag sums."""
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    n_bags = len(sizes)
    n_instances = int(offsets[-1]) if n_instances is None else n_instances
    values = np.ones(n_bags) if weights is None else np.asarray(weights, dtype=np.float64)
    data = np.repeat(values, sizes)
    indices = np.arange(offsets[0], offsets[-1], dtype=np.int64)
    return sp.csr_matrix((data, indices, offsets - offsets[0]), shape=(n_bags, n_instances))


def _bag_self_sums(X, offsets, kernel, gamma, degree) -> np.ndarray:
    """``sum_{a, a' in A} k(a, a')`` for every bag A, from blocks of whole bags (never all pairs)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    if kernel == "linear":
        S = bag_matrix(offsets) @ X
        return _row_sq_norms(S)
    n_bags = len(offsets) - 1
    sums = np.empty(n_bags)
    lo_bag = 0
    while lo_bag < n_bags:
        # As many consecutive bags as fit in one block (at least one bag).
        hi_bag = max(lo_bag + 1, int(np.searchsorted(offsets, offsets[lo_bag] + _BLOCK_ROWS, "right")) - 1)
        hi_bag = min(hi_bag, n_bags)
        rows = slice(offsets[lo_bag], offsets[hi_bag])
        K = pairwise_kernel(X[rows], X[rows], kernel, gamma=gamma, degree=degree)
        local = offsets[lo_bag:hi_bag + 1] - offsets[lo_bag]
        B = bag_matrix(local)
        sums[lo_bag:hi_bag] = np.einsum("ij,ij->i", (B @ K), B.toarray())
        lo_bag = hi_bag
    return sums


def set_normalizer(X, offsets, normalization: str = "averaging", *, kernel="linear", gamma="auto",
                   degree=3) -> np.ndarray:
    """The normalizer ``nu(A)`` of every bag (docs/algorithms.md 1.7): ``none`` 1, ``averaging`` |A|,
    ``featurespace`` ``sqrt(sum_{a, a' in A} k(a, a'))``.

    A bag whose featurespace self-sum is 0 gets ``nu = inf`` (its normalized kernel row is then 0) and a
    ``RuntimeWarning`` naming it (docs/algorithms.md 7, pitfalls).
    """
    sizes = np.diff(np.asarray(offsets, dtype=np.int64)).astype(np.float64)
    if normalization == "none":
        return np.ones_like(sizes)
    if normalization == "averaging":
        return sizes
    if normalization != "featurespace":
        raise ValueError(f"unknown set-kernel normalization {normalization!r}; choose one of "
                         f"{', '.join(NORMALIZATIONS)}")
    nu = np.sqrt(np.maximum(_bag_self_sums(X, offsets, kernel, gamma, degree), 0.0))
    zero = nu <= 1e-12 * max(1.0, float(nu.max(initial=0.0)))
    if zero.any():
        warnings.warn(f"featurespace normalization: bag(s) {np.flatnonzero(zero)[:10].tolist()} have a "
                      "zero kernel self-sum; their set-kernel rows are set to 0", RuntimeWarning,
                      stacklevel=2)
        nu[zero] = np.inf
    return nu


def set_kernel(X, offsets_x, Y=None, offsets_y=None, *, kernel="linear", normalization="averaging",
               gamma="auto", degree=3) -> np.ndarray:
    """``k_set(A, B) = sum_{a in A} sum_{b in B} k(a, b) / (nu(A) nu(B))`` between the bags of X
    (``offsets_x``) and of Y (``offsets_y``; the bags of X when omitted), shape ``(n_bags_x, n_bags_y)``."""
    params = dict(kernel=kernel, gamma=gamma, degree=degree)
    R_x = bag_matrix(offsets_x, 1.0 / set_normalizer(X, offsets_x, normalization, **params))
    if Y is None:
        return combination_gram(X, R_x, **params)
    R_y = bag_matrix(offsets_y, 1.0 / set_normalizer(Y, offsets_y, normalization, **params))
    return combination_gram(X, R_x, Y, R_y, **params)
