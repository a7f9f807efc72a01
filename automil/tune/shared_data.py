"""One copy of a run's instance matrix for all of its processes: the main process writes it once to a
temporary ``.npy`` file, and every fit worker and ``--jobs`` helper maps that file read-only (the bags they
receive carry the file's name, not the matrix; see :meth:`automil.Bags.mapped`).

The file goes when the run ends, fails or is stopped; a main process killed with SIGKILL cannot remove it,
so each run first removes the files of runs whose main process no longer exists."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from automil.bags import Bags
from automil.tune.processes import process_alive, process_identity

__all__ = ["share_instances", "release_instances", "remove_orphans", "RUN_DIRECTORY_PREFIX"]

RUN_DIRECTORY_PREFIX = "automil-run-"
OWNER_FILE = "owner"  # the process identity of the run's main process


def share_instances(bags: Bags) -> Bags:
    """The bags with their dense instances in a new temporary file, mapped; sparse bags (small text data),
    and dense ones where no file can be written, unchanged (every process then gets its own copy).

    The caller drops its unmapped bags, so the matrix it read is freed, and calls
    :func:`release_instances` when the run ends."""
    if bags.is_sparse:
        return bags
    remove_orphans()
    directory = shared = None
    try:
        directory = Path(tempfile.mkdtemp(prefix=RUN_DIRECTORY_PREFIX))
        (directory / OWNER_FILE).write_text(process_identity())
        shared = bags.mapped(directory / "instances.npy")
    except OSError:  # no temporary directory, or no room for the file
        pass
    finally:
        if shared is None and directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
    return bags if shared is None else shared


def release_instances(bags: Bags | None) -> None:
    """Remove the file (and its directory) that :func:`share_instances` made for ``bags``, if any.

    Processes that still map it keep their pages until they end (the file is only unlinked), but no new
    process can open it: call this after the run's workers and helpers have been closed."""
    if bags is not None and bags.instances_file is not None:
        shutil.rmtree(Path(bags.instances_file).parent, ignore_errors=True)


def remove_orphans() -> None:
    """Remove the run directories (in the temporary directory) whose main process has ended."""
    for directory in Path(tempfile.gettempdir()).glob(f"{RUN_DIRECTORY_PREFIX}*"):
        try:
            owner = (directory / OWNER_FILE).read_text()
        except OSError:
            continue  # not a run directory, or one still being made
        if owner and process_alive(owner) is False:
            shutil.rmtree(directory, ignore_errors=True)
