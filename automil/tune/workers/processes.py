"""The run's processes: an identity that survives pid reuse, whether a process still runs, its memory,
how it ended, dying with the parent; and the one copy of the run's instance matrix they all map.

The main process writes the instances once to a ``.npy`` file in a run directory of the temporary directory
(or of ``--scratch DIR``), and every fit worker and ``--jobs`` helper maps that file read-only (the bags they
receive carry the file's name, not the matrix; see :meth:`automil.Bags.mapped`). The file goes when the run
ends, fails or is stopped; a main process killed with SIGKILL cannot remove it, so each run first removes the
directories of runs whose main process no longer exists. A file on a memory-backed file system (a tmpfs
``/tmp``) takes its size of the machine's memory, which the run says."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from automil.bags import Bags

__all__ = ["process_identity", "process_alive", "resident_bytes", "exit_reason", "die_with_parent", "signals_held",
           "share_instances", "release_instances", "remove_orphans", "file_system", "RUN_DIRECTORY_PREFIX",
           "stop_after_ask_for_tests", "STOP_AFTER_ASK_ENV"]

_PR_SET_PDEATHSIG = 1


def process_identity(pid: int | None = None) -> str:
    """``host:pid:start`` naming a live process uniquely (the start time guards against pid reuse)."""
    import socket

    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def process_alive(identity: str) -> bool | None:
    """Whether the process named by :func:`process_identity` still runs; ``None`` if it is on another
    host (this machine cannot tell)."""
    import socket

    host, _, rest = identity.partition(":")
    pid, _, start = rest.partition(":")
    if host != socket.gethostname():
        return None
    try:
        pid = int(pid)
        os.kill(pid, 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        pass
    return _start_time(pid) == start


def _start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            # Field 22 (start time in clock ticks) follows the parenthesized command name.
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return ""


def resident_bytes(pid: int | None) -> int:
    if pid is None:
        return 0
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def exit_reason(code: int) -> str:
    if code is not None and code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def die_with_parent():
    """In the child before exec: ask Linux to SIGKILL it when the parent dies (even by SIGKILL)."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


@contextlib.contextmanager
def signals_held():
    """Within the block Ctrl-C and SIGTERM are held, not acted on: the block yields the list of the
    signals that came, for the caller to deliver (``signal.raise_signal``) once it can act on them. In the
    main thread only (elsewhere Python runs no handler), and a signal this process ignores stays ignored."""
    held = []
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) not in (signal.SIG_IGN, None):
                previous[signum] = signal.signal(signum, lambda number, frame: held.append(number))
    try:
        yield held
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


RUN_DIRECTORY_PREFIX = "automil-run-"
OWNER_FILE = "owner"  # the process identity of the run's main process


MEMORY_FILE_SYSTEMS = ("tmpfs", "ramfs")


def share_instances(load: Callable[[], Bags], scratch=None, notice: Callable[[str], None] | None = None) -> Bags:
    """The bags ``load()`` reads, with their dense instances in a new file in a run directory of ``scratch``
    (default: the temporary directory), mapped; sparse bags (small text data), and dense ones where no file
    can be written, in memory (every process then gets its own copy).

    A folder reader writes its bags into the file one at a time
    (:func:`automil.data.instance_matrix.writing_instances`), so a folder larger than memory is read without
    ever holding its matrix; the bags of other readers are read into memory, written once and dropped (the
    caller keeps only the mapped ones). ``notice`` hears, in one line, that the file lies on a memory-backed
    file system, or that it could not be written. The caller calls :func:`release_instances` when the run
    ends."""
    from automil.data.instance_matrix import writing_instances

    parent = Path(tempfile.gettempdir() if scratch is None else scratch)
    remove_orphans(parent)
    directory = bags = shared = None
    try:
        directory = Path(tempfile.mkdtemp(prefix=RUN_DIRECTORY_PREFIX, dir=parent))
        (directory / OWNER_FILE).write_text(process_identity())
        with writing_instances(directory / "instances.npy") as written:
            bags = load()
        if written.matrix is not None and np.may_share_memory(bags.X, written.matrix):
            bags.instances_file = str(written.path)
            bags.map_coords()
            shared = bags
        elif not bags.is_sparse:
            shared = bags.mapped(written.path)
    except OSError as error:  # no temporary directory, or no room for the file: the bags stay in memory
        _tell(notice, f"the run's instances could not be written to {parent} ({error.strerror or error}): "
                      "every process of the run holds its own copy (--scratch DIR names a directory with room)")
    finally:
        if shared is None and directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
    if bags is None:  # a folder's file could not be written: read the folder into memory
        bags = load()
    if shared is not None and file_system(directory) in MEMORY_FILE_SYSTEMS:
        size = sum(f.stat().st_size for f in directory.glob("*.npy")) / 1e6
        _tell(notice, f"the run's instances ({size:,.1f} MB) are in {directory}, on a memory-backed file system "
                      f"({file_system(directory)}): they take that much of the machine's memory; --scratch DIR "
                      "puts them on a disk")
    return bags if shared is None else shared


def _tell(notice, line: str) -> None:
    if notice is not None:
        notice(line)


def file_system(path, mounts: str = "/proc/self/mounts") -> str | None:
    """The type of the file system ``path`` lies on (``tmpfs``, ``ext4``...), from the mount table: the
    entry of the longest mount point above the resolved path, the last one where several are mounted on the
    same point (it hides the others). ``None`` where there is no mount table (not Linux).

    ``os.statvfs`` tells sizes, not what backs them, so the table is the one place that says whether a
    file takes disk or memory."""
    try:
        with open(mounts) as f:
            table = [line.split()[1:3] for line in f if len(line.split()) >= 3]
    except OSError:
        return None
    target = os.path.realpath(path)
    found, depth = None, -1
    for point, kind in table:
        point = _unescape(point)
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= depth:
            found, depth = kind, len(point)
    return found


def _unescape(point: str) -> str:
    """A mount point as the table writes it, with space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), point)


def release_instances(bags: Bags | None) -> None:
    """Remove the file (and its directory) that :func:`share_instances` made for ``bags``, if any.

    Processes that still map it keep their pages until they end (the file is only unlinked), but no new
    process can open it: call this after the run's workers and helpers have been closed."""
    if bags is not None and bags.instances_file is not None:
        shutil.rmtree(Path(bags.instances_file).parent, ignore_errors=True)


def remove_orphans(parent=None) -> None:
    """Remove the run directories in ``parent`` (default: the temporary directory) whose main process has
    ended."""
    for directory in Path(tempfile.gettempdir() if parent is None else parent).glob(f"{RUN_DIRECTORY_PREFIX}*"):
        try:
            owner = (directory / OWNER_FILE).read_text()
        except OSError:
            continue  # not a run directory, or one still being made
        if owner and process_alive(owner) is False:
            shutil.rmtree(directory, ignore_errors=True)


# The fault tests' hook: the process stops itself (SIGSTOP) right after the N-th ``ask()`` of the run, so
# that a test can kill it exactly between a trial's creation and its next write.
STOP_AFTER_ASK_ENV = "AUTOMIL_TEST_STOP_AFTER_ASK"
_asked = []


def stop_after_ask_for_tests() -> None:
    """Called right after each ``study.ask()``; stops the process at the ask ``$AUTOMIL_TEST_STOP_AFTER_ASK``
    counts (nothing when it is unset)."""
    _asked.append(True)
    after = os.environ.get(STOP_AFTER_ASK_ENV)
    if after is not None and len(_asked) == int(after):
        os.kill(os.getpid(), signal.SIGSTOP)
