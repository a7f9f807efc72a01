"""The built-in formats, registered through the ``register_formats`` hook as a plugin's would be.

The text formats (:mod:`automil.data.readers.text`) are told apart by their content, so they have no detector
of their own: a path that no other reader claims is read as text. Arrays (``.npz``) and bag folders are
recognised by their first bytes and by being a folder.
"""

from __future__ import annotations

from pathlib import Path

from automil.data.readers.errors import FormatError
from automil.hookspecs import hookimpl

__all__ = ["register_formats"]

# One array file is one bag's features at most: said plainly instead of "garbled bytes" from the text reader.
_ONE_BAG_MAGIC = {b"\x93NUMPY": ".npy", b"\x89HDF\r\n\x1a\n": "HDF5"}


@hookimpl
def register_formats(register):
    """Register the five text formats, ``npz``, the slide feature folders ``clam`` and ``trident`` and
    ``bag-folder`` (last among the folders: it takes any folder)."""
    from functools import partial

    from automil.data.readers.arrays import read_npz
    from automil.data.readers.bag_folder import read_bag_folder
    from automil.data.readers.reader import Reader
    from automil.data.readers.slide_folders import read_clam, read_trident, slide_layout
    from automil.data.readers.text import FORMAT_ALIASES, FORMATS, read_text

    aliases = {name: tuple(a for a, target in FORMAT_ALIASES.items() if target == name) for name in FORMATS}
    for name, description in FORMATS.items():
        register(Reader(name, partial(read_text, format=name), description, aliases=aliases[name]))
    register(Reader("npz", read_npz, "NumPy .npz: arrays X, offsets (bags + 1) or bag (bag index per instance), "
                                     "y; optional instance_y and bag_names", detect=_is_npz))
    labels = "and a labels CSV (slide_id,label, optional case_id) given by --labels or the one .csv beside them"
    register(Reader("clam", read_clam, "a CLAM features directory: h5_files/<slide>.h5 (features, coords) or "
                                       f"pt_files/<slide>.pt, {labels}", takes_labels=True,
                    detect=lambda path: slide_layout(path) == "clam"))
    register(Reader("trident", read_trident, f"a TRIDENT features_<encoder> folder of <slide>.h5 files, {labels}",
                    takes_labels=True, detect=lambda path: slide_layout(path) == "trident"))
    register(Reader("bag-folder", read_bag_folder, "a folder: labels.csv (columns bag,label, optional case_id) "
                                                   "and one <bag>.npy or <bag>.h5 feature file per bag",
                    takes_labels=True, detect=_is_bag_folder))


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(8)
    except OSError:
        return b""  # the text reader says why the file cannot be read


def _is_npz(path: Path) -> bool:
    """A zip archive, what ``np.savez`` writes."""
    from automil.data.readers.arrays import NPZ_MAGIC

    return not path.is_dir() and _head(path)[:4] in NPZ_MAGIC


def _is_bag_folder(path: Path) -> bool:
    """Any folder (the reader names what is missing in it); a lone ``.npy`` or ``.h5`` file is an error
    pointing at the folder layout."""
    if path.is_dir():
        return True
    head = _head(path)
    for magic, kind in _ONE_BAG_MAGIC.items():
        if head.startswith(magic):
            raise FormatError(path, None, f"a single {kind} file holds one array, not a data set: put one such "
                                          "file per bag in a folder with labels.csv, or write a .npz archive "
                                          "(see docs/data.md)")
    return False
