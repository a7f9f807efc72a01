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
