"""Bag statistics: each bag becomes the per-feature mean, max, min or standard deviation of its instances.

Dense bags are reduced with ``ufunc.reduceat`` over the bag offsets (streamed bags a block of bags at a
time, the same figures); sparse (CSR) bags stay sparse: the mean and the second moment are one sparse product
with the bag-averaging matrix, the max and min reduce only the stored values of each (bag, feature) pair and
count the implicit zeros in when the pair has fewer stored values than the bag has instances.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from automil import StreamedBags

__all__ = ["STATISTICS", "bag_statistics"]

STATISTICS = ("mean", "max", "min", "std")


def bag_statistics(bags, statistics=("mean", "max", "min")):
    """The chosen statistics of every bag side by side, shape ``(n_bags, len(statistics) * n_features)``;
    a CSR matrix for sparse bags, an ndarray otherwise."""
    unknown = [s for s in statistics if s not in STATISTICS]
    if unknown or not statistics:
        raise ValueError(f"statistics must be a non-empty sequence of {STATISTICS}, got {tuple(statistics)!r}")
    if bags.is_sparse:
        return sp.hstack([_sparse_statistic(bags, s) for s in statistics], format="csr")
    if isinstance(bags, StreamedBags):  # a bag's statistics need only its own rows: a block of bags at a time
        return np.vstack([bag_statistics(block, statistics) for block in bags.blocks()])
    return np.hstack([_dense_statistic(bags, s) for s in statistics])


def _dense_statistic(bags, statistic):
    starts, sizes = bags.offsets[:-1], bags.sizes[:, None]
    if statistic == "max":
        return np.maximum.reduceat(bags.X, starts, axis=0)
    if statistic == "min":
        return np.minimum.reduceat(bags.X, starts, axis=0)
    mean = np.add.reduceat(bags.X, starts, axis=0) / sizes
    if statistic == "mean":
        return mean
    centred = bags.X - np.repeat(mean, bags.sizes, axis=0)  # centred first: no cancellation in E[x^2] - mean^2
    return np.sqrt(np.add.reduceat(centred * centred, starts, axis=0) / sizes)


def _sparse_statistic(bags, statistic):
    if statistic in ("max", "min"):
        return _sparse_extreme(bags, np.maximum if statistic == "max" else np.minimum)
    averaging = sp.csr_matrix((1.0 / bags.sizes[bags.bag_index], (bags.bag_index, np.arange(bags.n_instances))),
                              shape=(bags.n_bags, bags.n_instances))
    mean = averaging @ bags.X
    if statistic == "mean":
        return mean
    variance = (averaging @ bags.X.multiply(bags.X) - mean.multiply(mean)).tocsr()
    np.sqrt(np.maximum(variance.data, 0.0), out=variance.data)  # rounding can leave -1e-17 where it is 0
    variance.eliminate_zeros()
    return variance


def _sparse_extreme(bags, ufunc):
    """Per (bag, feature) the max (or min) over the stored values, with 0 joining in where the bag has an
    instance that does not store the feature."""
    coo = bags.X.tocoo()
    n_features = bags.n_features
    keys = bags.bag_index[coo.row] * n_features + coo.col
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], coo.data[order]
    if len(keys) == 0:
        return sp.csr_matrix((bags.n_bags, n_features))
    pairs, first, counts = np.unique(keys, return_index=True, return_counts=True)
    extreme = ufunc.reduceat(values, first)
    bag = pairs // n_features
    extreme = np.where(counts < bags.sizes[bag], ufunc(extreme, 0.0), extreme)
    result = sp.csr_matrix((extreme, (bag, pairs % n_features)), shape=(bags.n_bags, n_features))
    result.eliminate_zeros()
    return result
