"""Data sets stored as arrays rather than text: which layout a path holds, and the reader for it.

``automil.data.readers.text.read_bags`` asks here first, so ``load_bags`` and every ``--dataset`` take these paths too.
"""

from __future__ import annotations

from pathlib import Path

from automil.data.readers.arrays import NPZ_MAGIC, read_npz
from automil.data.readers.bag_folder import read_bag_folder
from automil.data.readers.errors import FormatError

__all__ = ["LAYOUTS", "detect_layout", "read_layout"]

LAYOUTS = {
    "npz": "NumPy .npz: arrays X, offsets (bags + 1) or bag (bag index per instance), y; optional instance_y "
           "and bag_names",
    "bag-folder": "a folder: labels.csv (columns bag,label) and one <bag>.npy or <bag>.h5 feature file per bag",
}
_READERS = {"npz": read_npz, "bag-folder": read_bag_folder}
# One array file is one bag's features at most: said plainly instead of "garbled bytes" from the text reader.
_ONE_BAG_MAGIC = {b"\x93NUMPY": ".npy", b"\x89HDF\r\n\x1a\n": "HDF5"}


def detect_layout(path: Path) -> str | None:
    """``bag-folder`` for a directory, ``npz`` for a zip archive (what ``np.savez`` writes), else None (text)."""
    if path.is_dir():
        return "bag-folder"
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return None  # the text reader says why the file cannot be read
    for magic, kind in _ONE_BAG_MAGIC.items():
        if head.startswith(magic):
            raise FormatError(path, None, f"a single {kind} file holds one array, not a data set: put one such "
                                          "file per bag in a folder with labels.csv, or write a .npz archive "
                                          "(see docs/data.md)")
    return "npz" if head[:4] in NPZ_MAGIC else None


def read_layout(path: Path, layout: str):
    """The bags of ``path`` read as ``layout`` (a key of ``LAYOUTS``)."""
    return _READERS[layout](path)
