"""A dataset's files on disk: the data directory, the download cache, and checksummed files and downloads.

Files are looked for in the data directory (``--data-dir`` / ``AUTOMIL_DATA_DIR``), then in the download
cache (``AUTOMIL_CACHE_DIR``, else the user's cache directory); every file is checked against its sha256.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DataFile", "DataFileError", "data_dir", "cache_dir", "fetch", "sha256_of", "DATA_DIR_ENV",
           "CACHE_DIR_ENV"]

DATA_DIR_ENV = "AUTOMIL_DATA_DIR"
CACHE_DIR_ENV = "AUTOMIL_CACHE_DIR"


class DataFileError(ValueError):
    """A dataset file that is missing, corrupt or cannot be downloaded; the message says what to do."""


def data_dir() -> Path | None:
    """The directory named by ``AUTOMIL_DATA_DIR`` (the CLI's ``--data-dir`` sets it), if any."""
    value = os.environ.get(DATA_DIR_ENV)
    return Path(value).expanduser() if value else None


def cache_dir() -> Path:
    """Where downloads go: ``AUTOMIL_CACHE_DIR`` if set, else the user's cache directory for automil."""
    value = os.environ.get(CACHE_DIR_ENV)
    if value:
        return Path(value).expanduser()
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


# Files already verified in this process, keyed by (path, size, mtime): hashing is done once per file.
_verified: set[tuple] = set()


def fetch(datafile: DataFile) -> Path:
    """The verified local path of ``datafile``, downloading it into the cache when it has a URL.

    Raises
    ------
    DataFileError
        When the local file's sha256 differs from the registered one, when the file is nowhere and has no
        URL, or when the download fails or delivers other bytes (pooch then leaves nothing in the cache).
    """
    path = datafile.local_path()
    if path is not None:
        _verify(path, datafile.sha256)
        return path
    if datafile.url:
        return _download(datafile)
    looked = " and ".join(str(p) for p in datafile.search_paths())
    raise DataFileError(
        f"dataset file {datafile.path} not found (looked in {looked}) and it has no download URL: put the file "
        f"at one of these places, or point {DATA_DIR_ENV} (or --data-dir) at the directory that holds "
        f"{datafile.path}.")


def _verify(path: Path, sha256: str):
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key in _verified:
        return
    actual = sha256_of(path)
    if actual != sha256.lower():
        raise DataFileError(
            f"{path}: checksum mismatch: sha256 expected {sha256}, actual {actual}. The file is damaged or "
            "a different version: replace it with a good copy (or delete it, if it is in the download cache, "
            "and it is downloaded again).")
    _verified.add(key)


def _download(datafile: DataFile) -> Path:
    """Download with pooch, which writes to a temporary file and moves it into place only when the sha256
    matches, so a failed or wrong download leaves no file behind."""
    import pooch

    target = cache_dir() / datafile.path
    created = [d for d in (target.parent, *target.parent.parents) if not d.exists()]
    try:
        fetched = pooch.retrieve(datafile.url, known_hash=f"sha256:{datafile.sha256}", fname=target.name,
                                 path=target.parent, progressbar=False)
    except ValueError as error:  # pooch's hash mismatch
        _remove_empty(created)
        raise DataFileError(
            f"download of {datafile.path} from {datafile.url} failed its checksum, nothing was kept: "
            f"{' '.join(str(error).split())} The server delivered other bytes than registered; report it, "
            f"or get the file elsewhere and point {DATA_DIR_ENV} (or --data-dir) at its directory.") from None
    except Exception as error:  # noqa: BLE001 - requests and OS errors alike end in one clear message
        _remove_empty(created)
        raise DataFileError(
            f"could not download {datafile.path} from {datafile.url} into {target.parent}: "
            f"{type(error).__name__}: {error}. Check the connection, or get the file elsewhere and point "
            f"{DATA_DIR_ENV} (or --data-dir) at its directory.") from None
    return Path(fetched)


def _remove_empty(directories):
    """Undo the directories a failed download created (innermost first), so it leaves nothing behind."""
    for directory in directories:
        try:
            directory.rmdir()
        except OSError:
            return
