"""Bags stored as NumPy arrays in one ``.npz`` file: the layout for large data, read without parsing text.

The arrays are ``X`` (instances x features), either ``offsets`` (bag boundaries, bags + 1) or ``bag`` (the
bag index of every instance, in any order), ``y`` (one label per bag), and optionally ``instance_y`` and
``bag_names``. ``X`` keeps its dtype here (float32 stays float32); ``automil.Bags`` decides what it stores.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np

from automil.bags import Bags
from automil.data.readers.errors import FormatError
from automil.data.readers.npy_files import read_header, read_into

__all__ = ["NPZ_MAGIC", "read_npz"]

# np.savez and np.savez_compressed write zip archives; an empty archive starts with the end record.
NPZ_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_KNOWN = ("X", "offsets", "bag", "y", "instance_y", "bag_names")


def read_npz(path) -> Bags:
    """Read bags from a ``.npz`` archive (``np.savez`` or ``np.savez_compressed``).

    Raises
    ------
    FormatError
        Naming the file and, where one is at fault, the bag: a missing or misshapen array, a bag index
        out of range, an empty bag, a non-finite value, a damaged archive.
    """
    path = Path(path)
    arrays = _arrays(path)
    X, y = arrays["X"], arrays["y"]
    if X.ndim != 2 or X.dtype.kind not in "biuf":
        raise FormatError(path, None, f"X must be a 2-D numeric array (instances x features), got shape "
                                      f"{X.shape} of dtype {X.dtype}")
    if ("offsets" in arrays) == ("bag" in arrays):
        raise FormatError(path, None, "expected exactly one of the arrays offsets (bags + 1) and bag (the bag "
                                      f"index of every instance); the archive holds {', '.join(arrays)}")
    instance_y = arrays.get("instance_y")
    if "bag" in arrays:
        X, offsets, instance_y = _grouped(path, X, arrays["bag"], len(y), instance_y)
    else:
        offsets = _integers(path, "offsets", arrays["offsets"])
    try:
        return Bags(X, offsets, y, instance_y=instance_y, names=arrays.get("bag_names"), source=str(path))
    except ValueError as error:  # Bags names the bag at fault; say it as every reader does
        raise FormatError(path, None, str(error).removeprefix(f"{path}: ")) from None


def _arrays(path: Path) -> dict[str, np.ndarray]:
    """Every known array of the archive, read once; a damaged archive or member is one clear error."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            missing = [name for name in ("X", "y") if name not in npz.files]
            if missing:
                raise FormatError(path, None, f"no array {' or '.join(missing)} in the archive (it holds "
                                              f"{', '.join(npz.files) or 'nothing'}): see docs/data.md")
            arrays = {name: _instances(path, npz) if name == "X" else npz[name] for name in _KNOWN if name in npz.files}
    except OSError as error:
        raise FormatError(path, None, f"cannot read the file: {error.strerror or error}") from None
    except ValueError as error:
        if isinstance(error, FormatError):
            raise
        if "allow_pickle" in str(error):
            raise FormatError(path, None, "an array holds Python objects, which automil does not unpickle: "
                                          "save bag_names as strings (np.array(names, dtype=str))") from None
        raise _damaged(path, error) from None
    except (zipfile.BadZipFile, EOFError, zlib.error) as error:
        raise _damaged(path, error) from None
    for name, value in arrays.items():
        if not isinstance(value, np.ndarray):  # np.load hands members that are no .npy data over as bytes
            raise FormatError(path, None, f"the archive's member {name} is not a .npy array: write the archive "
                                          "with np.savez")
    return arrays


def _instances(path: Path, npz) -> np.ndarray:
    """``X``: from an uncompressed archive (``np.savez``) read straight from the file at its offset, sparing
    the zip module's chunked copy of the largest array; compressed, through ``np.load``."""
    info = next((i for i in npz.zip.infolist() if i.filename == "X.npy"), None)
    if info is None or info.compress_type != zipfile.ZIP_STORED:
        return npz["X"]
    with open(path, "rb") as f:  # the member's data follows its local header and that header's two names
        f.seek(info.header_offset + 26)
        name_length, extra_length = np.frombuffer(f.read(4), dtype="<u2")
    header = read_header(path, info.header_offset + 30 + int(name_length) + int(extra_length))
    X = np.empty(header.shape, dtype=header.dtype)
    read_into(path, header, X)
    return X


def _damaged(path: Path, error: Exception) -> FormatError:
    return FormatError(path, None, f"damaged .npz archive ({error}): the file is truncated or corrupt; get a "
                                   "fresh copy")


def _integers(path: Path, name: str, values: np.ndarray) -> np.ndarray:
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise FormatError(path, None, f"{name} must be a 1-D integer array, got shape {values.shape} of dtype "
                                      f"{values.dtype}")
    return values


def _grouped(path: Path, X: np.ndarray, bag: np.ndarray, n_bags: int, instance_y):
    """Instances in bag order (stable: a bag keeps the order of its rows) and the offsets; rows already in
    order are not copied."""
    bag = _integers(path, "bag", bag)
    if len(bag) != len(X):
        raise FormatError(path, None, f"bag holds {len(bag)} bag indices for the {len(X)} instances of X")
    outside = np.flatnonzero((bag < 0) | (bag >= n_bags))
    if outside.size:
        i = int(outside[0])
        raise FormatError(path, None, f"instance {i} has bag index {bag[i]}, but y labels bags 0 to "
                                      f"{n_bags - 1}")
    offsets = np.concatenate(([0], np.cumsum(np.bincount(bag, minlength=n_bags))))
    if (np.diff(bag) < 0).any():
        order = np.argsort(bag, kind="stable")
        X = X[order]
        if instance_y is not None and len(instance_y) == len(order):  # else Bags names the wrong count
            instance_y = instance_y[order]
    return X, offsets, instance_y
