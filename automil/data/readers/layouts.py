"""Data sets stored as arrays rather than text: which layout a path holds, and the reader for it.

``automil.data.readers.text.read_bags`` asks here first, so ``load_bags`` and every ``--dataset`` take these paths too.
"""

from __future__ import annotations

from pathlib import Path

from automil.data.readers.arrays import NPZ_MAGIC, read_npz
from automil.data.readers.bag_folder import read_bag_folder
from automil.data.readers.errors import FormatError
from automil.data.readers.slide_folders import read_clam, read_trident, slide_layout

__all__ = ["LAYOUTS", "detect_layout", "read_layout"]

LAYOUTS = {
    "npz": "NumPy .npz: arrays X, offsets (bags + 1) or bag (bag index per instance), y; optional instance_y "
           "and bag_names",
    "bag-folder": "a folder: labels.csv (columns bag,label) and one <bag>.npy or <bag>.h5 feature file per bag",
    "clam": "a CLAM features directory: h5_files/<slide>.h5 (features, coords) or pt_files/<slide>.pt, and a "
            "labels CSV (slide_id,label, optional case_id) given by --labels or the one .csv beside them",
    "trident": "a TRIDENT features_<encoder> folder of <slide>.h5 files (features, coords), and a labels CSV "
               "as for clam",
}
_READERS = {"npz": read_npz}
_TABLE_READERS = {"bag-folder": read_bag_folder, "clam": read_clam, "trident": read_trident}  # take --labels
# One array file is one bag's features at most: said plainly instead of "garbled bytes" from the text reader.
_ONE_BAG_MAGIC = {b"\x93NUMPY": ".npy", b"\x89HDF\r\n\x1a\n": "HDF5"}


def detect_layout(path: Path) -> str | None:
    """``clam`` or ``trident`` for their feature directories, ``bag-folder`` for another directory, ``npz``
    for a zip archive (what ``np.savez`` writes), else None (text)."""
    if path.is_dir():
        return slide_layout(path) or "bag-folder"
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


def read_layout(path: Path, layout: str, labels=None, groups: str | None = None):
    """The bags of ``path`` read as ``layout`` (a key of ``LAYOUTS``); ``labels`` (a labels CSV) and ``groups``
    (its column of every bag's group) apply to the folders only."""
    if layout in _TABLE_READERS:
        return _TABLE_READERS[layout](path, labels, groups)
    if labels is not None or groups is not None:
        raise FormatError(path, None, f"--labels and --groups apply to folders of feature files "
                                      f"({', '.join(_TABLE_READERS)}), not to a {layout} data set")
    return _READERS[layout](path)
