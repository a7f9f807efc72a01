""".npy files read straight into place: the header parsed once, the data read into a slice of a preallocated
matrix (one copy from the page cache, no array in between).

``np.load`` costs about half a millisecond per file in header parsing (``ast.literal_eval``) and memory-map
set-up; a folder of thousands of bags pays that thousands of times. Headers that are not plain (structured
dtypes) fall back to ``np.load``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["NpyHeader", "read_header", "read_into"]

MAGIC = b"\x93NUMPY"
_DESCR = re.compile(r"'descr':\s*'([^']+)'")
_FORTRAN = re.compile(r"'fortran_order':\s*(True|False)")
_SHAPE = re.compile(r"'shape':\s*\(([\d,\s]*)\)")


@dataclass(frozen=True)
class NpyHeader:
    """What a .npy file holds and where its data starts."""

    shape: tuple
    dtype: np.dtype
    fortran_order: bool
    data_offset: int

    @property
    def data_bytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def read_header(path: Path, start: int = 0) -> NpyHeader:
    """The header of the .npy data at byte ``start`` of the file at ``path`` (not 0: an uncompressed member
    of a .npz archive); ``data_offset`` counts from the start of the file.

    Raises
    ------
    ValueError
        When the file is not a .npy file, or is shorter than its header says (truncated).
    """
    with open(path, "rb") as f:
        f.seek(start)
        head = f.read(12)
        if len(head) < 10 or head[:6] != MAGIC:
            raise ValueError("not a .npy file (no NumPy magic bytes at its start)")
        size_bytes = 2 if head[6] == 1 else 4
        length = int.from_bytes(head[8:8 + size_bytes], "little")
        f.seek(start + 8 + size_bytes)
        text = f.read(length).decode("latin1" if head[6] < 3 else "utf8")
        size = os.fstat(f.fileno()).st_size
    descr, fortran, shape = _DESCR.search(text), _FORTRAN.search(text), _SHAPE.search(text)
    if descr and fortran and shape:
        header = NpyHeader(tuple(int(n) for n in shape.group(1).replace(",", " ").split()),
                           np.dtype(descr.group(1)), fortran.group(1) == "True", start + 8 + size_bytes + length)
    elif start:
        raise ValueError("an array of a structured dtype, not numbers")
    else:  # a structured dtype or an unusual header: numpy knows every form
        array = np.load(path, mmap_mode="r", allow_pickle=False)
        header = NpyHeader(array.shape, array.dtype, False, int(array.offset))
    if header.dtype.hasobject:
        raise ValueError("the array holds Python objects, not numbers")
    if size < header.data_offset + header.data_bytes:
        raise ValueError(f"the file holds {size} bytes, but its header promises "
                         f"{header.data_offset + header.data_bytes} (truncated?)")
    return header


def read_into(path: Path, header: NpyHeader, out: np.ndarray):
    """Fill ``out`` (C-contiguous, of ``header.shape``) with the file's data, converted to ``out.dtype``."""
    with open(path, "rb") as f:
        f.seek(header.data_offset)
        if header.dtype == out.dtype and not header.fortran_order and out.flags.c_contiguous:
            if f.readinto(memoryview(out).cast("B")) != header.data_bytes:
                raise ValueError("the file ended before its data did (truncated?)")
            return
        data = np.fromfile(f, dtype=header.dtype, count=int(np.prod(header.shape, dtype=np.int64)))
    out[...] = data.reshape(header.shape, order="F" if header.fortran_order else "C")
