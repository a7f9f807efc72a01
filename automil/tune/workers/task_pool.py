"""Tasks over several fit workers at once: each task on the next free worker, results in completion order, a
failing task reported in its place, and an overall time budget that stops what is still running."""

from __future__ import annotations

import math
import time
from multiprocessing.connection import wait

from automil.tune.workers.isolation import (
    MEMORY_POLL_SECONDS,
    FitError,
    FitMemoryExceeded,
    FitTimeout,
    FitWorker,
    WorkerDied,
)

__all__ = ["run_tasks", "OutOfTime"]


class OutOfTime(Exception):
    """The task was not started, or was stopped, because the caller's overall time budget ran out."""


def run_tasks(workers: list[FitWorker], tasks, timeout: float | None = None, budget: float | None = None):
    """Run ``(fn, *args)`` tasks on several workers at once; yield ``(index, result or exception)``.

    Results come in completion order; a task that times out, fails or kills its worker yields the
    exception instead of a result, and the other tasks go on. ``timeout`` limits each task; ``budget``
    (seconds from now) all of them: a task still running then is stopped and one not yet started is
    skipped, both yielding :class:`OutOfTime`. A budget already spent starts no worker: a killed worker's
    replacement would start and preload its libraries for tasks that never run.
    """
    if budget is not None and budget <= 0:
        yield from ((index, OutOfTime("not started: the time budget ran out")) for index in range(len(tasks)))
        return
    timeout = math.inf if timeout is None else timeout
    end = math.inf if budget is None else time.monotonic() + budget
    pending = list(enumerate(tasks))[::-1]
    running: dict[FitWorker, tuple[int, bool]] = {}
    for worker in workers[:len(pending)]:
        worker.start()  # all children start up in parallel
    while pending or running:
        for worker in workers:
            if pending and worker not in running:
                index, (fn, *args) = pending.pop()
                left = end - time.monotonic()
                if left <= 0:
                    yield index, OutOfTime("not started: the time budget ran out")
                    continue
                # where the budget ends first, an anytime learner is told so and ends in it (automil.time_left)
                worker.submit(fn, *args, timeout=min(timeout, left), budget=left if left < timeout else None)
                running[worker] = (index, left < timeout)
        if not running:
            continue
        wait_seconds = min(w.deadline for w in running) - time.monotonic()
        if any(w.memory_limit is not None for w in running):
            wait_seconds = min(wait_seconds, MEMORY_POLL_SECONDS)
        wait([w.replies for w in running], timeout=max(0.0, wait_seconds))
        for worker in [w for w in running if w.ready(0)]:
            index, cut = running.pop(worker)
            try:
                yield index, worker.collect()
            except FitTimeout:
                yield index, (OutOfTime("stopped: the time budget ran out") if cut else
                              FitTimeout(f"the fit ran past its {timeout:g} s limit; its process was killed"))
            except (FitMemoryExceeded, FitError, WorkerDied) as error:
                yield index, error
