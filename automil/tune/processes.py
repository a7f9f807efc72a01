"""Processes by name and by fate: an identity that survives pid reuse, whether it still runs, its
memory, how it ended, and dying with the parent."""

from __future__ import annotations

import contextlib
import os
import signal
import threading

__all__ = ["process_identity", "process_alive", "resident_bytes", "exit_reason", "die_with_parent", "signals_held"]

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
