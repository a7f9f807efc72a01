"""Bags stored as a folder: ``labels.csv`` (columns ``bag,label``) and one feature file per bag, named after
it: ``<bag>.npy`` (2-D) or ``<bag>.h5`` (a ``features`` dataset, as pathology feature extractors write them).

Each feature file is opened twice: once for its shape and dtype, so the instance matrix is allocated once at
its final size, then to read its rows straight into their place (no list of per-bag arrays, no concatenation;
in the run's file, bag by bag, within :func:`~automil.data.instance_matrix.writing_instances`).
Instance labels, when a data set has them, are ``<bag>.instance_y.npy`` or an ``instance_y`` dataset in the
``.h5`` file, for every bag or for none.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from automil.bags import Bags
from automil.data.instance_matrix import InstanceMatrix
from automil.data.label_columns import LabelColumns
from automil.data.readers.errors import FormatError
from automil.data.readers.feature_files import FeatureFile
from automil.data.readers.labels_table import LabelsTable, read_labels_table
from automil.data.readers.npy_files import NpyHeader, read_header, read_into

__all__ = ["LABELS", "FEATURE_SUFFIXES", "INSTANCE_LABELS", "read_bag_folder"]

LABELS = "labels.csv"
FEATURE_SUFFIXES = (".npy", ".h5")
INSTANCE_LABELS = "instance_y"  # <bag>.instance_y.npy beside a .npy, or a dataset in the .h5 file


@dataclass(frozen=True)
class _BagFile(FeatureFile):
    """One bag's feature file: where it is, what it holds, and how to read it into place."""

    shape: tuple
    dtype: np.dtype
    npy: NpyHeader | None = None  # None for an .h5 file

    @property
    def is_h5(self) -> bool:
        return self.path.suffix == ".h5"

    @classmethod
    def open(cls, name: str, path: Path) -> _BagFile:
        """The file's shape and dtype, read from its header; the file is checked to hold them all."""
        bag = cls(name, path, (), np.dtype(np.float64))
        if path.suffix == ".h5":
            with bag.h5() as f:
                features = bag.h5_features(f)
                bag = cls(name, path, features.shape, features.dtype)
        else:
            npy = bag.guard(lambda: read_header(path))
            bag = cls(name, path, npy.shape, npy.dtype, npy)
        shape, dtype = bag.shape, bag.dtype
        if len(shape) != 2:
            raise bag.error(f"the features have shape {shape}; a bag needs a 2-D array (instances x features)")
        if dtype.kind not in "biuf":
            raise bag.error(f"the features are of dtype {dtype}, not numbers")
        if shape[0] == 0:
            raise bag.error(f"no instances (shape {shape}): every bag needs at least one")
        return bag

    def read_into(self, out: np.ndarray) -> np.ndarray | None:
        """Fill ``out`` (this bag's rows of the instance matrix), refuse NaN and inf, and return the bag's
        instance labels (None without any); an .h5 file is opened once for both."""
        if self.is_h5:
            with self.h5() as f:
                self.guard(lambda: self.h5_features(f).read_direct(out))
                instance_y = self.guard(lambda: f[INSTANCE_LABELS][()]) if INSTANCE_LABELS in f else None
        else:
            self.guard(lambda: read_into(self.path, self.npy, out))
            instance_y = self._npy_instance_labels()
        self.refuse_non_finite(out)
        return instance_y

    def _npy_instance_labels(self) -> np.ndarray | None:
        path = self.path.with_name(f"{self.name}.{INSTANCE_LABELS}.npy")
        if not path.is_file():
            return None
        return _BagFile(self.name, path, (), self.dtype).guard(lambda: np.load(path, allow_pickle=False))


def read_bag_folder(folder, labels=None, groups: str | None = None, columns: LabelColumns | None = None) -> Bags:
    """Read the bags of a folder in the order of its ``labels.csv`` (or of the table ``labels``, read as
    ``columns`` say), each bag's group from the table's column ``groups`` (default ``case_id`` when it has one).

    Raises
    ------
    FormatError
        Naming the file and the bag: a bag without a feature file, a feature file without a label, features
        of another width than the first bag's, an empty bag, NaN or inf, a damaged or non-2-D file, instance
        labels for some bags only.
    """
    folder = Path(folder)
    table = _labels(folder, labels, groups, columns)
    names, lines = table.names, table.lines
    files = [_BagFile.open(name, path) for name, path in zip(names, _feature_paths(folder, names, lines))]
    width = files[0].shape[1]
    for bag in files[1:]:
        if bag.shape[1] != width:
            raise bag.error(f"{bag.shape[1]} features, but bag {files[0].name!r} ({files[0].path.name}) has "
                            f"{width}: every bag needs the same width")
    offsets = np.concatenate(([0], np.cumsum([bag.shape[0] for bag in files])))
    dtype = np.result_type(*{bag.dtype for bag in files})
    with InstanceMatrix(offsets[-1], width, dtype if dtype.kind == "f" else np.float64) as matrix:
        instance_y = [matrix.fill(start, stop, bag.read_into)
                      for bag, start, stop in zip(files, offsets[:-1], offsets[1:])]
    X = matrix.array()
    return table.bags(X, offsets, instance_y=_instance_labels(files, instance_y), source=str(folder))


def _labels(folder: Path, labels, groups: str | None, columns: LabelColumns | None) -> LabelsTable:
    """The labels table: ``labels`` when given, else the folder's ``labels.csv``."""
    path = folder / LABELS if labels is None else Path(labels)
    if labels is None and not path.is_file():
        raise FormatError(folder, None, f"no {LABELS}: a bag folder needs a labels table with the columns "
                                        "bag,label and one <bag>.npy or <bag>.h5 file per bag")
    return read_labels_table(path, ("bag",), "bag", groups, columns)


def _feature_paths(folder: Path, names: list[str], lines: dict[str, int]) -> list[Path]:
    """The feature file of every labelled bag; every feature file must belong to a labelled bag."""
    found: dict[str, Path] = {}
    for entry in os.scandir(folder):
        stem, suffix = os.path.splitext(entry.name)
        if suffix not in FEATURE_SUFFIXES or stem.endswith(f".{INSTANCE_LABELS}"):
            continue
        if stem in found:
            raise FormatError(Path(entry.path), None, f"bag {stem!r} has two feature files "
                                                      f"({found[stem].name} and {entry.name}): keep one")
        found[stem] = Path(entry.path)
    unlabelled = sorted(set(found) - set(lines))
    if unlabelled:
        more = f" ({len(unlabelled) - 1} more such files)" if len(unlabelled) > 1 else ""
        raise FormatError(found[unlabelled[0]], None, f"bag {unlabelled[0]!r} has a feature file but no row in "
                                                      f"{LABELS}{more}")
    for name in names:
        if name not in found:
            raise FormatError(folder / LABELS, lines[name], f"bag {name!r} has no feature file ({name}.npy or "
                                                            f"{name}.h5) in {folder}")
    return [found[name] for name in names]


def _instance_labels(files: list[_BagFile], parts: list) -> np.ndarray | None:
    """The instance labels of every bag in one array, or None when no bag has them."""
    if all(part is None for part in parts):
        return None
    for bag, part in zip(files, parts, strict=True):
        if part is None:
            raise bag.error(f"no instance labels ({bag.name}.{INSTANCE_LABELS}.npy or an {INSTANCE_LABELS} "
                            "dataset), though other bags have them: give them for every bag or for none")
        if part.shape != (bag.shape[0],):
            raise bag.error(f"{part.size} instance labels of shape {part.shape} for {bag.shape[0]} instances")
    return np.concatenate(parts)
