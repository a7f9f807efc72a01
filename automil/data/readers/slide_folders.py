"""Slide feature folders as the pathology extractors write them: one feature file per slide, a labels table.

CLAM writes ``DIR/h5_files/<slide>.h5`` (datasets ``features``, patches x D, and ``coords``, patches x 2) and
``DIR/pt_files/<slide>.pt`` (the features as a torch tensor); TRIDENT writes ``.../features_<encoder>/
<slide>.h5`` with the same two datasets. The labels table is a CSV with the columns ``slide_id`` (or ``bag``)
and ``label``, optionally ``case_id``: the patient, every bag's group unless another column is named.
Each feature file is opened once for its shape, then read straight into its rows of the instance matrix
(:class:`~automil.data.instance_matrix.InstanceMatrix`: in memory, or slide by slide into the run's file).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from automil.bags import Bags, instance_dtype
from automil.data.instance_matrix import InstanceMatrix
from automil.data.label_columns import LabelColumns
from automil.data.readers.errors import FormatError
from automil.data.readers.feature_files import FeatureFile
from automil.data.readers.labels_table import read_labels_table

__all__ = ["read_clam", "read_trident", "slide_layout"]

BFLOAT16 = "torch.bfloat16"
TORCH_HINT = "reading .pt feature files needs torch: pip install torch (or read the .h5 files instead)"


def slide_layout(path: Path) -> str | None:
    """``clam`` for a CLAM features directory (or its ``h5_files``/``pt_files``), ``trident`` for a TRIDENT
    one (a ``features_<encoder>`` folder, or a folder with exactly one below it), else ``None``."""
    if not path.is_dir():
        return None
    if path.name in ("h5_files", "pt_files") or (path / "h5_files").is_dir() or (path / "pt_files").is_dir():
        return "clam"
    return "trident" if _trident_features(path) is not None else None


def read_clam(folder, labels=None, groups: str | None = None, columns: LabelColumns | None = None) -> Bags:
    """The slides of a CLAM features directory: ``h5_files`` when present (they carry ``coords``), else
    ``pt_files``; ``folder`` may also be either of the two. ``labels``: the labels CSV, by default the one
    ``.csv`` file in ``folder``, read as ``columns`` say."""
    folder = Path(folder)
    if folder.name in ("h5_files", "pt_files"):
        features, root = folder, folder.parent
    else:
        features, root = (folder / "h5_files" if (folder / "h5_files").is_dir() else folder / "pt_files"), folder
    return _read_slides(features, _table(labels, root, folder), groups, columns)


def read_trident(folder, labels=None, groups: str | None = None, columns: LabelColumns | None = None) -> Bags:
    """The slides of a TRIDENT ``features_<encoder>`` folder (or a folder holding exactly one, as TRIDENT's
    job directory does); ``labels``: the labels CSV, by default the one ``.csv`` file in ``folder``, read as
    ``columns`` say."""
    folder = Path(folder)
    features = _trident_features(folder)
    if features is None:
        raise FormatError(folder, None, "no features_<encoder> folder (or more than one): give --dataset the "
                                        "one to read")
    return _read_slides(features, _table(labels, folder, folder), groups, columns)


def _trident_features(path: Path) -> Path | None:
    if path.name.startswith("features_"):
        return path
    found = [p for p in [*path.glob("features_*"), *path.glob("*/features_*")] if p.is_dir()]
    return found[0] if len(found) == 1 else None


def _table(labels, root: Path, folder: Path) -> Path:
    if labels is not None:
        return Path(labels)
    tables = sorted(root.glob("*.csv"))
    if len(tables) != 1:
        found = f"found {len(tables)}" if tables else "found none"
        raise FormatError(folder, None, f"which labels table? give --labels FILE (a CSV with the columns "
                                        f"slide_id,label and optionally case_id; {found} in {root})")
    return tables[0]


def _read_slides(features: Path, labels: Path, groups: str | None, columns: LabelColumns | None) -> Bags:
    table = read_labels_table(labels, ("slide_id", "bag"), "slide", groups, columns)
    suffix = ".h5" if any(features.glob("*.h5")) else ".pt"
    files = {p.stem: p for p in features.glob(f"*{suffix}")}
    for name in table.names:
        if name not in files:
            raise FormatError(table.path, table.lines[name], f"slide {name!r} has no feature file "
                                                             f"({name}{suffix}) in {features}")
    extra = sorted(set(files) - set(table.lines))
    if extra:
        warnings.warn(f"{features}: {len(extra)} feature file(s) have no row in {table.path} and are left out "
                      f"(first: {extra[0]}{suffix})", stacklevel=3)
    slides = [_Slide.open(name, files[name]) for name in table.names]
    width = slides[0].shape[1]
    for slide in slides[1:]:
        if slide.shape[1] != width:
            raise slide.error(f"{slide.shape[1]} features per patch, but slide {slides[0].name!r} has {width}: "
                              "every slide needs the same encoder")
    offsets = np.concatenate(([0], np.cumsum([s.shape[0] for s in slides])))
    dtype = instance_dtype(np.result_type(*(s.dtype for s in slides)))  # float16 slides stay float16
    with InstanceMatrix(offsets[-1], width, dtype) as matrix:
        coords = [matrix.fill(start, stop, slide.read_into)
                  for slide, start, stop in zip(slides, offsets[:-1], offsets[1:])]
    X = matrix.array()
    has_coords = [c is not None for c in coords]
    if any(has_coords) and not all(has_coords):
        raise slides[has_coords.index(False)].error("no coords, though other slides have them")
    return table.bags(X, offsets, source=str(features), coords=np.concatenate(coords) if all(has_coords) else None)


@dataclass(frozen=True)
class _Slide(FeatureFile):
    """One slide's feature file: where it is, the shape of its features and their dtype."""

    shape: tuple
    dtype: np.dtype

    noun, instance = "slide", "patch"

    @classmethod
    def open(cls, name: str, path: Path) -> _Slide:
        slide = cls(name, path, (), np.dtype(np.float64))
        if path.suffix == ".pt":
            features = slide._pt()
            shape, dtype = tuple(features.shape), _numpy_dtype(features)
        else:
            with slide.h5() as f:
                features = slide.h5_features(f)
                shape, dtype = features.shape, features.dtype
        if len(shape) == 3 and shape[0] == 1:  # CLAM's batch of one: (1, patches, D)
            shape = shape[1:]
        if len(shape) != 2 or shape[0] == 0 or dtype.kind not in "biuf":
            raise slide.error(f"the features are {dtype} of shape {shape}; a slide needs a 2-D array of numbers "
                              "(patches x features) with at least one patch")
        return cls(name, path, shape, dtype)

    def read_into(self, out: np.ndarray) -> np.ndarray | None:
        """Fill ``out`` with the features, refuse NaN and inf, and return the coords (``None`` without)."""
        coords = None
        if self.path.suffix == ".pt":
            features = self._pt().reshape(out.shape)
            out[...] = (features.float() if str(features.dtype) == BFLOAT16 else features).numpy()
        else:
            with self.h5() as f:
                features = self.h5_features(f)
                if features.shape == out.shape:
                    self.guard(lambda: features.read_direct(out))
                else:  # (1, patches, D)
                    self.guard(lambda: out.__setitem__(Ellipsis, features[0]))
                if "coords" in f:
                    coords = self.guard(lambda: np.asarray(f["coords"][()]))
                    if coords.shape != (out.shape[0], 2):
                        raise self.error(f"coords of shape {coords.shape} for {out.shape[0]} patches; expected "
                                         f"({out.shape[0]}, 2)")
        self.refuse_non_finite(out)
        return coords

    def _pt(self):
        try:
            import torch
        except ImportError:
            raise self.error(TORCH_HINT) from None
        # mapped: opening a slide for its shape reads no features
        tensor = self.guard(lambda: torch.load(self.path, map_location="cpu", weights_only=True, mmap=True))
        if not isinstance(tensor, torch.Tensor):
            raise self.error(f"the .pt file holds a {type(tensor).__name__}, not a tensor of features")
        return tensor


def _numpy_dtype(tensor) -> np.dtype:
    """The numpy dtype of a tensor's features; bfloat16, which numpy lacks, is read as float32 (exactly)."""
    name = str(tensor.dtype)
    return np.dtype(np.float32) if name == BFLOAT16 else np.dtype(name.removeprefix("torch."))
