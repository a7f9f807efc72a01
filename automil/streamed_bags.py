"""Bags of a larger matrix read a bag (or a block of bags) at a time and standardized as they are read.

A fold of a cohort larger than memory cannot be gathered into one array. A learner that declares
``accepts_streamed`` (``bag-stats``, the networks) gets its training and test folds as
:class:`StreamedBags` instead of :class:`~automil.Bags`: the rows stay in the run's mapped matrix, and only
the bags being read are in memory, standardized with the training fold's statistics, in the matrix's dtype
(float16 read as float32), by the same arithmetic as :meth:`automil.evaluation.standardized.Standardized.transform`.
"""

from __future__ import annotations

import copy
import functools
import mmap

import numpy as np

__all__ = ["BLOCK_BYTES", "StreamedBags", "read_dtype", "release_pages"]

# Bytes of float64 per block of rows read at once (statistics, standardization, a block of bags): a block of a
# 1,024-wide matrix is 2,048 rows, so a pass over a fold holds no more than this beside it.
BLOCK_BYTES = 1 << 24


def read_dtype(dtype) -> np.dtype:
    """The dtype instances stored in ``dtype`` are read in for arithmetic: float16 (an encoder's half-precision
    features, kept so in the run's file) as float32, since numpy computes float16 in software, with no BLAS,
    and its running sums lose digits; every other dtype as it is."""
    return np.dtype(np.float32) if np.dtype(dtype) == np.float16 else np.dtype(dtype)


def release_pages(X) -> None:
    """Unmap the pages of the file-mapped matrix ``X`` (or of the file under a view of it) that this process
    has read; nothing for an array in memory.

    The pages stay in the page cache, shared and read again on the next access, but no longer count in this
    process's memory: a pass over a cohort larger than memory does not leave the process holding every page
    it read until the kernel runs short."""
    while X is not None and not isinstance(X, np.memmap):
        X = getattr(X, "base", None)
    if X is not None and isinstance(getattr(X, "_mmap", None), mmap.mmap):
        X._mmap.madvise(mmap.MADV_DONTNEED)


class StreamedBags:
    """The bags at ``bag_indices`` of ``bags``, not gathered, their instances standardized when read.

    Parameters
    ----------
    bags : Bags
        Dense bags, usually the run's mapped instances.
    bag_indices : array-like of int, optional
        The bags taken, in this order (default: every bag).
    mean, scale : ndarray of shape (n_features,), optional
        Instances are read as ``(x - mean) / scale``; as they are stored when not given.

    It answers what learners ask of ``Bags`` except ``X``: ``n_bags``, ``sizes``, ``offsets`` (of the bags
    laid end to end), ``y``, ``groups``, ``covariates``, ``instance_y``, ``bags[i]``, and reads instances with
    :meth:`take` and :meth:`blocks`.
    """

    is_sparse = False

    def __init__(self, bags, bag_indices=None, mean=None, scale=None):
        if bags.is_sparse:
            raise ValueError("only dense bags are streamed; sparse bags are gathered")
        self._bags = bags
        self.bag_indices = (np.arange(bags.n_bags) if bag_indices is None
                            else np.asarray(bag_indices, dtype=np.int64) % max(bags.n_bags, 1))
        self.starts = bags.offsets[self.bag_indices]
        self.sizes = bags.offsets[self.bag_indices + 1] - self.starts
        self.offsets = np.concatenate(([0], np.cumsum(self.sizes)))
        self.mean, self.scale = mean, scale
        self.y = None if bags.y is None else bags.y[self.bag_indices]
        self.names = None if bags.names is None else bags.names[self.bag_indices]
        self.groups = None if bags.groups is None else bags.groups[self.bag_indices]
        self.covariates = None if bags.covariates is None else bags.covariates[self.bag_indices]
        self.source, self.feature_names = bags.source, bags.feature_names
        self.covariate_names, self.slide_names = bags.covariate_names, bags.slide_names

    def standardized(self, mean, scale) -> StreamedBags:
        """The same bags, read as ``(x - mean) / scale``."""
        streamed = copy.copy(self)  # the arrays are shared, never written
        streamed.mean, streamed.scale = mean, scale
        return streamed

    def with_labels(self, y) -> StreamedBags:
        streamed = copy.copy(self)
        streamed.y = None if y is None else np.asarray(y)
        return streamed

    @property
    def n_bags(self) -> int:
        return len(self.bag_indices)

    @property
    def n_instances(self) -> int:
        return int(self.offsets[-1])

    @property
    def n_features(self) -> int:
        return self._bags.n_features

    @property
    def classes(self) -> np.ndarray:
        return np.unique(self.y)

    @functools.cached_property
    def instance_y(self):
        """Instance labels of the bags, laid end to end (``None`` where the data has none)."""
        source = self._bags.instance_y
        return None if source is None else source[self._bags.instance_rows(self.bag_indices)]

    @functools.cached_property
    def coords(self):
        source = self._bags.coords
        return None if source is None else source[self._bags.instance_rows(self.bag_indices)]

    @functools.cached_property
    def instance_slides(self):
        source = self._bags.instance_slides
        return None if source is None else source[self._bags.instance_rows(self.bag_indices)]

    def bag_name(self, i: int) -> str:
        return self._bags.bag_name(int(self.bag_indices[i]))

    def __len__(self) -> int:
        return self.n_bags

    def __getitem__(self, i: int) -> np.ndarray:
        return self._read(slice(self.starts[i], self.starts[i] + self.sizes[i]))

    def __iter__(self):
        return (self[i] for i in range(self.n_bags))

    def to_list(self) -> list:
        return list(self)

    def take(self, bags: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The instances at ``positions`` inside the bags ``bags`` (integer arrays of one shape), read and
        standardized; shape ``bags.shape + (n_features,)``."""
        rows = self.starts[bags] + positions
        if (positions < 0).any() or (positions >= self.sizes[bags]).any():
            raise IndexError("an instance position past its bag's end")
        return self._read(rows.reshape(-1)).reshape(rows.shape + (self.n_features,))

    def blocks(self, max_bytes: int | None = None):
        """Consecutive bags as in-memory :class:`~automil.Bags` of about ``max_bytes`` (default ``BLOCK_BYTES``) of
        float64 each (a bag larger than that alone), standardized, with their labels and groups: what a learner
        that reduces bag by bag reads."""
        Bags = type(self._bags)  # automil.Bags, without importing the module that imports this one
        max_bytes = BLOCK_BYTES if max_bytes is None else max_bytes
        row_bytes = 8 * self.n_features
        start = 0
        while start < self.n_bags:
            fits = np.flatnonzero(np.cumsum(self.sizes[start:]) * row_bytes <= max_bytes)
            stop = start + max(1, len(fits))
            rows = np.concatenate([np.arange(self.starts[i], self.starts[i] + self.sizes[i])
                                   for i in range(start, stop)])
            part = slice(start, stop)
            yield Bags(self._read(rows), self.offsets[start:stop + 1] - self.offsets[start],
                       None if self.y is None else self.y[part],
                       groups=None if self.groups is None else self.groups[part],
                       names=None if self.names is None else self.names[part], source=self.source,
                       covariates=None if self.covariates is None else self.covariates[part],
                       covariate_names=self.covariate_names)
            start = stop

    def means(self) -> np.ndarray:
        """Each bag's mean instance as read, shape ``(n_bags, n_features)``, in float64 from a block of bags at a
        time: what a learner that centres every bag on its own mean subtracts."""
        means = [np.add.reduceat(block.X, block.offsets[:-1], axis=0, dtype=np.float64) / block.sizes[:, None]
                 for block in self.blocks()]
        return np.concatenate(means) if means else np.empty((0, self.n_features))

    def gathered(self):
        """The bags in memory as :class:`~automil.Bags`, for a learner that cannot stream them."""
        return type(self._bags)(self._read(self._bags.instance_rows(self.bag_indices)), self.offsets, self.y,
                    instance_y=self.instance_y, names=self.names, feature_names=self.feature_names,
                    source=self.source, coords=self.coords, groups=self.groups, covariates=self.covariates,
                    covariate_names=self.covariate_names, slide_names=self.slide_names,
                    instance_slides=self.instance_slides)

    def _read(self, rows) -> np.ndarray:
        """Rows of the matrix (a slice or an index array), standardized in the matrix's :func:`read_dtype`."""
        X = np.array(self._bags.X[rows], dtype=read_dtype(self._bags.X.dtype))  # a copy: a slice would stay mapped
        release_pages(self._bags.X)
        if self.mean is None:
            return X
        np.subtract(X, self.mean.astype(X.dtype, copy=False), out=X)
        return np.divide(X, self.scale.astype(X.dtype, copy=False), out=X)

    def __repr__(self) -> str:
        return f"StreamedBags(n_bags={self.n_bags}, n_instances={self.n_instances}, n_features={self.n_features})"
