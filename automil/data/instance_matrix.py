"""The instance matrix a folder reader fills bag by bag: an array in memory, or, inside
:func:`writing_instances`, a ``.npy`` file written one bag at a time and mapped read-only once full.

A folder of feature files may hold more than the machine's memory (a cohort of 1,000 slides of 10,000 patches
of 1,024 features is 41 GB of float32). Its reader opens every file for its shape first, so the matrix's
size is known before a row is read; then each bag is read into a buffer of its own size and written to its
rows of the file. The process holds one bag at a time, and the file is the run's one copy of the instances
(:func:`automil.tune.workers.processes.share_instances`).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["InstanceMatrix", "InstancesFile", "writing_instances"]


@dataclass
class InstancesFile:
    """Where the readers inside :func:`writing_instances` write their matrix; ``matrix`` is the one written
    there (mapped read-only), ``None`` while no reader has written one."""

    path: Path
    matrix: np.ndarray | None = field(default=None, repr=False)


_target: contextvars.ContextVar[InstancesFile | None] = contextvars.ContextVar("automil_instances_file", default=None)


@contextlib.contextmanager
def writing_instances(path):
    """Within the block, a reader's :class:`InstanceMatrix` is the ``.npy`` file ``path``, written bag by bag;
    the block yields the :class:`InstancesFile` that tells whether one was written. Readers that build their
    matrix otherwise (text files, archives) are not affected."""
    target = InstancesFile(Path(path))
    token = _target.set(target)
    try:
        yield target
    finally:
        _target.reset(token)


class InstanceMatrix:
    """An ``(n_instances, n_features)`` matrix filled one bag's rows at a time.

    Parameters
    ----------
    n_instances, n_features : int
    dtype : dtype
        float32 or float64.

    Used as a context manager (the file is closed however the reading ends). In memory, :meth:`fill` hands
    the reader the matrix's own rows (no copy). Inside :func:`writing_instances`, it hands a buffer of the
    bag's size and writes it to the file, so that reading never holds more than the largest bag;
    :meth:`array` is then the file mapped read-only.
    """

    def __init__(self, n_instances: int, n_features: int, dtype):
        self.shape = (int(n_instances), int(n_features))
        self.dtype = np.dtype(dtype)
        self._target = _target.get()
        if self._target is None:
            self._X, self._file = np.empty(self.shape, dtype=self.dtype), None
            return
        self._X = None
        header = np.lib.format.open_memmap(self._target.path, mode="w+", dtype=self.dtype, shape=self.shape)
        self._offset = header.offset  # the file now has its header and its full (sparse) size
        del header
        self._file = open(self._target.path, "r+b")

    def fill(self, start: int, stop: int, read: Callable[[np.ndarray], object]):
        """``read(rows)`` fills ``rows``, the matrix's rows ``start:stop`` (or a buffer written to them);
        returns what ``read`` returns."""
        if self._file is None:
            return read(self._X[start:stop])
        rows = np.empty((stop - start, self.shape[1]), dtype=self.dtype)
        result = read(rows)
        self._file.seek(self._offset + start * self.shape[1] * self.dtype.itemsize)
        self._file.write(memoryview(rows).cast("B"))
        return result

    def array(self) -> np.ndarray:
        """The full matrix: the array in memory, or the file mapped read-only."""
        if self._file is None:
            return self._X
        self._file.close()
        self._target.matrix = np.asarray(np.load(self._target.path, mmap_mode="r"))
        return self._target.matrix

    def __enter__(self) -> InstanceMatrix:
        return self

    def __exit__(self, *exc):
        if self._file is not None:
            self._file.close()  # written rows stay; a failed read's file goes with the run's directory
