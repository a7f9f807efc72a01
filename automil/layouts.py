"""Data sets stored as arrays rather than text: which layout a path holds, and the reader for it.

``automil.formats.read_bags`` asks here first, so ``load_bags`` and every ``--dataset`` take these paths too.
"""

from __future__ import annotations

from pathlib import Path

from automil.arrays import NPZ_MAGIC, read_npz
from automil.bag_folder import read_bag_folder

__all__ = ["LAYOUTS", "detect_layout", "read_layout"]

LAYOUTS = {
    "npz": "NumPy .npz: arrays X, offsets (bags + 1) or bag (bag index per instance), y; optional instance_y "
           "and bag_names",
    "bag-folder": "a folder: labels.csv (columns bag,label) and one <bag>.npy or <bag>.h5 feature file per bag",
}
_READERS = {"npz": read_npz, "bag-folder": read_bag_folder}


def detect_layout(path: Path) -> str | None:
    """``bag-folder`` for a directory, ``npz`` for a zip archive (what ``np.savez`` writes), else None (text)."""
    if path.is_dir():
        return "bag-folder"
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return None  # the text reader says why the file cannot be read
    return "npz" if head in NPZ_MAGIC else None


def read_layout(path: Path, layout: str):
    """The bags of ``path`` read as ``layout`` (a key of ``LAYOUTS``)."""
    return _READERS[layout](path)
