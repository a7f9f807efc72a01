"""How a network's batches read a cohort: the next batch read in a thread while the current one trains (a cut
bag's rows are a few contiguous runs: :mod:`automil.row_runs`)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import NamedTuple

__all__ = ["prefetched"]

_END = object()


class _Failed(NamedTuple):
    """An error the producer met, carried to the caller's thread."""

    error: BaseException


def prefetched(items: Iterable, depth: int = 1) -> Iterator:
    """``items`` in their order, each produced in a thread while the caller works on the one before it: at
    most ``depth`` items ahead of the caller (``depth=1``: the next batch is read while this one trains, two
    batches held). The producer alone advances ``items``, so a generator drawing from a seeded generator
    yields exactly what it yields unthreaded. An error raised producing an item is raised here in its
    place; a caller that stops early stops the thread (at its next item) and closes ``items``."""
    ready: queue.SimpleQueue = queue.SimpleQueue()
    slots, stop = threading.Semaphore(depth), threading.Event()

    def produce():
        source = iter(items)
        try:
            while slots.acquire() and not stop.is_set():
                item = next(source, _END)
                if item is _END:
                    break
                ready.put(item)
        except BaseException as error:  # raised in the caller's thread, in the item's place
            ready.put(_Failed(error))
        finally:
            getattr(source, "close", lambda: None)()
            ready.put(_END)

    thread = threading.Thread(target=produce, name="automil-deep-prefetch", daemon=True)
    thread.start()
    try:
        while (item := ready.get()) is not _END:
            if isinstance(item, _Failed):
                raise item.error
            slots.release()
            yield item
    finally:
        stop.set()
        slots.release()  # wakes a producer waiting for a slot, which then sees the stop and ends
        thread.join()
