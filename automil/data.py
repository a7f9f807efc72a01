"""DatasetSpec, the data directory, and checksummed files and downloads."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DatasetSpec", "DataFile", "data_dir", "cache_dir"]

DATA_DIR_ENV = "AUTOMIL_DATA_DIR"


@dataclass(frozen=True)
class DatasetSpec:
    """What a plugin registers for one dataset.

    Parameters
    ----------
    name : str
        The name users type (``automil tune --dataset NAME``).
    load : callable
        ``load() -> Bags``.
    description, citation : str
        Shown by ``automil datasets`` and written into reports.
    n_bags, n_instances, n_features, n_classes : int, optional
        Task facts, listed without loading the data.
    files : tuple of DataFile
        The files ``load`` reads; empty for generated data.
    plugin : str
        Filled in by the registry.
    """

    name: str
    load: Callable
    description: str = ""
    citation: str = ""
    n_bags: int | None = None
    n_instances: int | None = None
    n_features: int | None = None
    n_classes: int | None = None
    files: tuple = ()
    plugin: str = ""

    def available(self) -> bool:
        """True when every file is on disk (generated datasets always are)."""
        return all(f.local_path() is not None for f in self.files)


def data_dir() -> Path | None:
    """The directory named by ``AUTOMIL_DATA_DIR`` (the CLI's ``--data-dir`` sets it), if any."""
    value = os.environ.get(DATA_DIR_ENV)
    return Path(value).expanduser() if value else None


def cache_dir() -> Path:
    """Where downloads go: the user's cache directory for automil."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("automil"))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset: its path relative to the data directory, its sha256 and where to get it."""

    path: str
    sha256: str
    url: str | None = None

    def search_paths(self) -> list[Path]:
        """The data directory first, then the download cache."""
        roots = [d for d in (data_dir(), cache_dir()) if d is not None]
        return [root / self.path for root in roots]

    def local_path(self) -> Path | None:
        return next((p for p in self.search_paths() if p.is_file()), None)


def load_bags(name_or_path, format: str | None = None):
    """``Bags`` for a registered dataset name, or for a file in any supported format.

    A registered name wins over a file of the same name in the working directory. ``format`` names
    the file format when detection from the content is not wanted (see ``automil.formats``).
    """
    from automil import plugins

    name = str(name_or_path)
    if format is None and name in plugins.datasets():
        return plugins.get_dataset(name).load()
    path = Path(name).expanduser()
    if path.is_file():
        from automil.formats import read_bags

        return read_bags(path, format=format)
    plugins.get_dataset(name)  # raises with the known names and close matches
