"""Worker tasks for the isolation tests: each takes the worker's data as its first argument."""

import time

import numpy as np


def hold_memory(n_bytes, seconds=30.0):
    """Allocate and touch ``n_bytes``, then hold them."""
    block = np.ones(int(n_bytes) // 8)
    time.sleep(seconds)
    return float(block[0])


def nap(data, seconds):
    """Sleep, then echo the data (a task that outlives a time limit)."""
    time.sleep(seconds)
    return data


def time_left(data):
    """The seconds the task was given, as the task sees them (automil.time_left)."""
    import automil

    return automil.time_left()


_PINNED = []


def fragment_heap(data, n_bytes):
    """Allocate ``n_bytes`` in 64 KB blocks (from the heap, below glibc's mmap threshold) and free all but the
    last, which pins the freed pages below it: glibc keeps them until they are trimmed."""
    blocks = [bytearray(64 * 1024) for _ in range(int(n_bytes) // (64 * 1024))]
    _PINNED.append(blocks[-1])
    return len(blocks)


def private_bytes(data):
    """The process's private resident memory (RssAnon), in bytes."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("RssAnon:"))
