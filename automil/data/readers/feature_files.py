"""One bag's feature file in a folder reader (bag folders, slide feature folders): its errors name the file
and the bag, and a damaged file is said in one line."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from automil.data.readers.errors import FormatError

__all__ = ["FeatureFile"]

# What numpy, h5py and torch raise on bad bytes.
READ_ERRORS = (OSError, ValueError, EOFError, KeyError, RuntimeError, pickle.UnpicklingError)


@dataclass(frozen=True)
class FeatureFile:
    """A bag's feature file: ``noun`` and ``instance`` say what a bag and an instance are called in errors."""

    name: str
    path: Path

    noun, instance = "bag", "instance"

    def error(self, what: str) -> FormatError:
        return FormatError(self.path, None, f"{self.noun} {self.name!r}: {what}")

    def guard(self, read):
        """``read()``, with a damaged file (truncated, not this format, unreadable) said in one line."""
        try:
            return read()
        except FormatError:
            raise
        except READ_ERRORS as error:
            raise self.error(f"cannot read the {self.path.suffix} file ({error}): the file is truncated or "
                             "corrupt; get a fresh copy") from None

    def refuse_non_finite(self, features: np.ndarray) -> None:
        """A ``FormatError`` naming the first NaN or inf of the bag's ``features``."""
        finite = np.isfinite(features)
        if not finite.all():
            row, col = (int(v) for v in np.argwhere(~finite)[0])
            raise self.error(f"a non-finite value ({features[row, col]}) in {self.instance} {row}, feature {col}: "
                             "NaN and inf are not allowed")

    def h5(self):
        import h5py

        return self.guard(lambda: h5py.File(self.path, "r"))

    def h5_features(self, f):
        """The ``features`` dataset of the open HDF5 file ``f``."""
        import h5py

        features = f.get("features")
        if not isinstance(features, h5py.Dataset):
            raise self.error(f"no 'features' dataset in the HDF5 file (it holds {', '.join(f) or 'nothing'})")
        return features
