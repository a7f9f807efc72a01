"""The bag data model: every instance of every bag in one matrix, bags as row ranges."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from automil.endpoints import task_of
from automil.streamed_bags import BLOCK_BYTES, StreamedBags, release_pages

__all__ = ["Bags", "as_bags", "BAG_FIELDS", "INSTANCE_FIELDS"]

# The fields of Bags with one entry per bag, and with one per instance: what a subset takes its part of.
BAG_FIELDS = ("names", "groups", "covariates")
INSTANCE_FIELDS = ("instance_y", "coords", "instance_slides")


class Bags:
    """A set of bags stored as one ``(n_instances, n_features)`` matrix plus bag offsets.

    Bag ``i`` is ``X[offsets[i]:offsets[i + 1]]``. Keeping all instances in one contiguous array lets
    learners vectorize over instances and lets folds be cut by gathering rows once.

    Parameters
    ----------
    X : ndarray of shape (n_instances, n_features) or scipy sparse matrix
        Instances, converted to C-contiguous float64 (CSR for sparse input); a dense float32 or float16 matrix
        keeps its dtype (a half or a quarter of the memory for features from a network; learners read float16
        as float32, :func:`~automil.streamed_bags.read_dtype`, and one that needs float64 converts its own
        working set).
    offsets : array-like of int of shape (n_bags + 1,)
        Start row of each bag, then ``n_instances``.
    y : array-like of shape (n_bags,), optional
        Bag labels, any hashable values.
    instance_y : array-like of shape (n_instances,), optional
        Instance labels where the data set has real ones.
    coords : array-like of shape (n_instances, 2), optional
        Each instance's position (a patch's pixel coordinates on its slide), for heatmaps.
    groups : array-like of shape (n_bags,), optional
        The group of every bag (a patient's slides): every split keeps a group's bags on one side.
    names : sequence of str of shape (n_bags,), optional
        Bag names, used in error messages and reports.
    feature_names : sequence of str of shape (n_features,), optional
    covariates, covariate_names : array-like of float of shape (n_bags, n_covariates), and its names, optional
        Bag-level covariates (a patient's age, a one-hot stage) that learners may use beside the instances.
    slide_names, instance_slides : optional
        Bags of several slides (``--bag-by``): the slides' names, and each instance's index into them.
    source : str, optional
        Where the bags came from (a file path or a data set name), for error messages.

    Raises
    ------
    ValueError
        On an empty bag, a NaN or infinite value, malformed offsets or a label count that differs from
        the bag count; the message names the bag.
    """

    def __init__(self, X, offsets, y=None, *, instance_y=None, names=None, feature_names=None,
                 source=None, coords=None, groups=None, covariates=None, covariate_names=None, slide_names=None,
                 instance_slides=None):
        self.source = source
        self.names = None if names is None else np.asarray([str(n) for n in names], dtype=object)
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=np.float64)
            X.sort_indices()
        else:
            X = np.asarray(X)
            X = np.ascontiguousarray(X, dtype=instance_dtype(X.dtype))
        if X.ndim != 2:
            raise ValueError(f"{self._where()}instances must be a 2-D array, got {X.ndim} dimension(s)")
        self.X = X
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.y = None if y is None else np.asarray(y)
        self.instance_y = None if instance_y is None else np.asarray(instance_y)
        self.coords = None if coords is None else np.asarray(coords)
        self.groups = None if groups is None else np.asarray([str(g) for g in groups], dtype=object)
        self.feature_names = None if feature_names is None else [str(f) for f in feature_names]
        self.covariates = None if covariates is None else np.asarray(covariates, dtype=np.float64)
        self.covariate_names = None if covariate_names is None else [str(c) for c in covariate_names]
        self.slide_names = None if slide_names is None else np.asarray([str(n) for n in slide_names], dtype=object)
        self.instance_slides = None if instance_slides is None else np.asarray(instance_slides, dtype=np.int32)
        self.instances_file = self.coords_file = None
        self._validate()

    @classmethod
    def from_list(cls, bags: Iterable, y=None, **kwargs) -> Bags:
        """Build from a list of 2-D arrays, one per bag (the convention of existing MIL libraries)."""
        bags = list(bags)
        if not bags:
            raise ValueError("no bags given: the list of bags is empty")
        width = None
        parts = []
        names = kwargs.get("names")
        for i, bag in enumerate(bags):
            label = _bag_label(i, names)
            is_sparse = sp.issparse(bag)
            if not is_sparse:
                bag = np.asarray(bag)
                bag = bag.astype(instance_dtype(bag.dtype), copy=False)
                if bag.ndim == 1:
                    raise ValueError(f"{label} is 1-D (shape {bag.shape}); a bag must be a 2-D array "
                                     "of shape (n_instances, n_features)")
                if bag.ndim != 2:
                    raise ValueError(f"{label} has {bag.ndim} dimensions; a bag must be 2-D")
            if width is None:
                width = bag.shape[1]
            elif bag.shape[1] != width:
                raise ValueError(f"{label} has {bag.shape[1]} features but bag 0 has {width}: "
                                 "all bags must have the same width")
            parts.append(bag)
        sizes = np.array([b.shape[0] for b in parts], dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(sizes)))
        if any(sp.issparse(b) for b in parts):
            X = sp.vstack([sp.csr_matrix(b) for b in parts], format="csr")
        else:
            X = np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]
        return cls(X, offsets, y, **kwargs)

    # ---- shape -------------------------------------------------------------------------------------
    @property
    def n_bags(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_instances(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def sizes(self) -> np.ndarray:
        """Number of instances in each bag, shape (n_bags,)."""
        return np.diff(self.offsets)

    @property
    def bag_index(self) -> np.ndarray:
        """For every instance, the index of its bag, shape (n_instances,)."""
        return np.repeat(np.arange(self.n_bags), self.sizes)

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.X)

    def means(self) -> np.ndarray:
        """Each bag's mean instance, shape ``(n_bags, n_features)``, in float64 (dense instances read a block
        of bags at a time: a mapped matrix larger than memory is never copied whole)."""
        if self.is_sparse:
            from automil.kernels import bag_matrix  # numba's import only where sparse bags ask for it

            return np.asarray((bag_matrix(self.offsets, 1.0 / self.sizes) @ self.X).todense())
        return StreamedBags(self).means()

    @property
    def classes(self) -> np.ndarray:
        """Sorted distinct bag labels."""
        if self.y is None:
            raise ValueError(f"{self._where()}these bags have no labels")
        return np.unique(self.y)

    def __len__(self) -> int:
        return self.n_bags

    def __getitem__(self, i: int):
        """The instances of bag ``i`` (a view for dense data)."""
        i = range(self.n_bags)[i]
        return self.X[self.offsets[i]:self.offsets[i + 1]]

    def __iter__(self):
        return (self[i] for i in range(self.n_bags))

    def __repr__(self) -> str:
        kind, task = "sparse " if self.is_sparse else "", None if self.y is None else task_of(self.y)
        labels = "" if task is None else f", {len(self.classes)} classes" if task == "classification" else f", {task}"
        return f"Bags({self.n_bags} bags, {self.n_instances} instances, {self.n_features} {kind}features{labels})"

    # ---- derived sets ------------------------------------------------------------------------------
    def to_list(self) -> list:
        return list(self)

    def instance_rows(self, bag_indices) -> np.ndarray:
        """Row indices of the instances of the given bags, in that bag order."""
        bag_indices = np.asarray(bag_indices, dtype=np.int64)
        starts = self.offsets[bag_indices]
        sizes = self.offsets[bag_indices + 1] - starts
        new_offsets = np.concatenate(([0], np.cumsum(sizes)))
        return np.repeat(starts - new_offsets[:-1], sizes) + np.arange(new_offsets[-1])

    def subset(self, bag_indices, X=None) -> Bags:
        """The bags at ``bag_indices`` (e.g. a cross-validation fold), with one row gather; ``X``: their
        instances when the caller made them (standardized in blocks, without the gathered copy)."""
        bag_indices = np.asarray(bag_indices, dtype=np.int64)
        if bag_indices.ndim != 1:
            raise ValueError("bag indices must be 1-D")
        if bag_indices.size and (bag_indices.min() < -self.n_bags or bag_indices.max() >= self.n_bags):
            raise IndexError(f"bag index out of range for {self.n_bags} bags")
        bag_indices = bag_indices % max(self.n_bags, 1)
        rows = self.instance_rows(bag_indices)
        sizes = self.sizes[bag_indices]
        return Bags(self.X[rows] if X is None else X, np.concatenate(([0], np.cumsum(sizes))),
                    None if self.y is None else self.y[bag_indices], **self.bag_fields(bag_indices, rows))

    def with_instances(self, X) -> Bags:
        """The same bags (labels, names) with new instance features, e.g. after standardization."""
        return Bags(X, self.offsets, self.y, **{**self.bag_fields(),
                    "feature_names": None if X.shape[1] != self.n_features else self.feature_names})

    def with_labels(self, y) -> Bags:
        bags = Bags(self.X, self.offsets, y, **self.bag_fields())
        bags.instances_file, bags.coords_file = self.instances_file, self.coords_file
        return bags

    def bag_fields(self, bag_indices=None, rows=None) -> dict:
        """Everything but the instances, offsets and labels, as ``Bags(...)`` takes it: what a copy with new
        instances or labels keeps, or (``bag_indices`` and their instances' ``rows``) a subset's."""
        fields = {name: getattr(self, name) for name in (*BAG_FIELDS, *INSTANCE_FIELDS, "feature_names", "source",
                                                         "covariate_names", "slide_names")}
        if bag_indices is None:
            return fields
        taken = {**dict.fromkeys(BAG_FIELDS, bag_indices), **dict.fromkeys(INSTANCE_FIELDS, rows)}
        return {name: value if value is None or name not in taken else value[taken[name]]
                for name, value in fields.items()}

    # ---- one matrix for many processes -------------------------------------------------------------
    def mapped(self, path) -> Bags:
        """These bags with their dense instances written to the ``.npy`` file ``path`` and mapped from it
        read-only.

        Pickled, the result carries the file's name instead of the matrix (``instances_file``): every
        process it is sent to maps the same pages, so a run holds one copy of the data however many
        processes use it. The file must outlive those processes; whoever made it removes it. The coords,
        if any, go the same way (:meth:`map_coords`).
        """
        if self.is_sparse:
            raise ValueError("only dense instances can be mapped from a file")
        np.save(path, self.X)
        bags = self.__new__(Bags)
        bags.__dict__.update(self.__dict__, X=_map_instances(path), instances_file=str(path))
        bags.map_coords()
        return bags

    def map_coords(self) -> None:
        """Write the coords beside the mapped instances file (``<name>.coords.npy``) and map them from it, so
        that pickled bags carry neither (a cohort's coords are 16 bytes a patch, 160 MB at 10 million
        patches, in every process). Nothing to do without coords, a file, or when they are mapped already."""
        if self.coords is None or self.instances_file is None or self.coords_file is not None:
            return
        path = Path(self.instances_file).with_suffix(".coords.npy")
        np.save(path, self.coords)
        self.coords, self.coords_file = _map_instances(path), str(path)

    @functools.cached_property
    def digest(self) -> str:
        """The sha256 (hex) of the content: instances, bag boundaries and labels, with their dtypes and shapes.

        Computed once per bags (a pass over every instance) and kept, so the driver's naming and every
        study's MLflow input share one hash; a mapped or pickled copy carries it along. The arrays are
        hashed, not the file: where the file lies, its name and its format do not change the digest, and
        the data already in memory is not read again.
        """
        digest = hashlib.sha256()
        parts = [self.X.data, self.X.indices, self.X.indptr] if sp.issparse(self.X) else [self.X]
        parts += [self.offsets, np.asarray([] if self.y is None else [str(v) for v in self.y])]
        parts += [] if self.covariates is None else [self.covariates, np.asarray(self.covariate_names)]
        for part in parts:
            array = np.ascontiguousarray(part)
            digest.update(f"{array.dtype.str}{array.shape}".encode())
            for block in row_blocks(array if array.ndim == 2 else array.reshape(-1, 1)):
                digest.update(block.reshape(-1).view(np.uint8))  # block by block: the digest of one update
        return digest.hexdigest()

    def __getstate__(self):
        state = dict(self.__dict__)
        if self.instances_file is not None:
            state["X"] = None
        if self.coords_file is not None:
            state["coords"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.instances_file is not None:
            self.X = _map_instances(self.instances_file)
        if self.coords_file is not None:
            self.coords = _map_instances(self.coords_file)

    # ---- validation --------------------------------------------------------------------------------
    def bag_name(self, i: int) -> str:
        return _bag_label(i, self.names)

    def bag_of_row(self, row: int) -> int:
        return int(np.searchsorted(self.offsets, row, side="right") - 1)

    def _where(self) -> str:
        return f"{self.source}: " if self.source else ""

    def _validate(self):
        offsets, n = self.offsets, self.X.shape[0]
        if offsets.ndim != 1 or len(offsets) < 2:
            raise ValueError(f"{self._where()}offsets must be a 1-D array of n_bags + 1 integers "
                             "(no bags given?)")
        if offsets[0] != 0 or offsets[-1] != n:
            raise ValueError(f"{self._where()}offsets must start at 0 and end at n_instances={n}, "
                             f"got {offsets[0]} and {offsets[-1]}")
        sizes = np.diff(offsets)
        if (sizes < 0).any():
            raise ValueError(f"{self._where()}offsets must not decrease (at bag {int(np.argmax(sizes < 0))})")
        if (sizes == 0).any():
            i = int(np.argmax(sizes == 0))
            raise ValueError(f"{self._where()}{self.bag_name(i)} is empty: every bag needs at least one "
                             "instance")
        if self.X.shape[1] == 0:
            raise ValueError(f"{self._where()}instances have no features")
        values = self.X.data[:, None] if sp.issparse(self.X) else self.X
        # min and max propagate NaN and show an infinity without allocating a mask of the whole matrix
        if values.size and not all(np.isfinite(b.min()) and np.isfinite(b.max()) for b in row_blocks(values)):
            if sp.issparse(self.X):
                coo = self.X.tocoo()
                bad = ~np.isfinite(coo.data)
                row, col = int(coo.row[bad][0]), int(coo.col[bad][0])
                value = coo.data[bad][0]
            else:
                row, col = (int(v) for v in np.argwhere(~np.isfinite(self.X))[0])
                value = self.X[row, col]
            i = self.bag_of_row(row)
            raise ValueError(f"{self._where()}{self.bag_name(i)} has a non-finite value ({value}) in "
                             f"instance {row - offsets[i]}, feature {col}: NaN and inf are not allowed")
        for name, values, expected, unit in (("labels", self.y, self.n_bags, "bags"),
                                             ("names", self.names, self.n_bags, "bags"),
                                             ("groups", self.groups, self.n_bags, "bags"),
                                             ("covariates", self.covariates, self.n_bags, "bags"),
                                             ("instance labels", self.instance_y, n, "instances"),
                                             ("coords", self.coords, n, "instances"),
                                             ("instance slides", self.instance_slides, n, "instances")):
            if values is not None and len(values) != expected:
                raise ValueError(f"{self._where()}got {len(values)} {name} for {expected} {unit}")
        if self.coords is not None and (self.coords.ndim != 2 or self.coords.shape[1] != 2):
            raise ValueError(f"{self._where()}coords must have shape (n_instances, 2), got {self.coords.shape}")
        covariates, k = self.covariates, None if self.covariate_names is None else len(self.covariate_names)
        if (covariates is None and k) or covariates is not None and (
                covariates.ndim != 2 or k not in (None, covariates.shape[1]) or not np.isfinite(covariates).all()):
            raise ValueError(f"{self._where()}covariates must be finite, of shape (n_bags, n_covariates), one name "
                             f"each: got {None if covariates is None else covariates.shape} for {k} names")
        if (self.instance_slides is None) != (self.slide_names is None):
            raise ValueError(f"{self._where()}give instance_slides and slide_names together, or neither")
        if self.feature_names is not None and len(self.feature_names) != self.X.shape[1]:
            raise ValueError(f"{self._where()}got {len(self.feature_names)} feature names for "
                             f"{self.X.shape[1]} features")


def row_blocks(X: np.ndarray, rows=None, block_bytes: int | None = None):
    """The rows of dense ``X`` (its ``rows``, gathered) a block of ``block_bytes`` (default ``BLOCK_BYTES``) of
    float64 at a time; a file-mapped ``X`` gives back the pages of a block once the next is asked for, so a
    pass over a matrix larger than memory holds one."""
    n = X.shape[0] if rows is None else len(rows)
    step = max(1, (BLOCK_BYTES if block_bytes is None else block_bytes) // (8 * max(1, X.shape[1])))
    for start in range(0, n, step):
        yield X[start:start + step] if rows is None else X[rows[start:start + step]]
        release_pages(X)


def instance_dtype(dtype) -> np.dtype:
    """The dtype dense instances are stored in: float32 and float16 (an encoder's own precision) stay as they
    are, everything else becomes float64. Of several dtypes (the files of a folder), give their
    ``np.result_type``: the widest float wins, so float16 beside float32 is float32."""
    dtype = np.dtype(dtype)
    return dtype if dtype in (np.float32, np.float16) else np.dtype(np.float64)


def as_bags(bags, y=None) -> Bags:
    """Accept ``Bags`` or a list of 2-D arrays (plus labels) and return ``Bags``.

    Labels given here override the labels stored in ``bags``. :class:`~automil.streamed_bags.StreamedBags` pass
    through as they are (a learner that accepts them reads them a block at a time).
    """
    if isinstance(bags, Bags | StreamedBags):
        return bags if y is None else bags.with_labels(y)
    if isinstance(bags, np.ndarray) and bags.ndim == 2:
        raise ValueError("got one 2-D array: pass a list of 2-D arrays (one per bag) or automil.Bags")
    if not isinstance(bags, Sequence | np.ndarray) and not hasattr(bags, "__iter__"):
        raise TypeError(f"expected automil.Bags or a list of 2-D arrays, got {type(bags).__name__}")
    return Bags.from_list(bags, y)


def _map_instances(path) -> np.ndarray:
    """The matrix of an ``.npy`` file, mapped read-only (a plain ndarray view, so no result of arithmetic
    on it is a memory map)."""
    return np.asarray(np.load(path, mmap_mode="r"))


def _bag_label(i: int, names) -> str:
    if names is not None and i < len(names):
        return f"bag {i} ({names[i]!r})"
    return f"bag {i}"
