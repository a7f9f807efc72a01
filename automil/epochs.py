"""Progress inside one fit: a learner that trains in epochs tells the driver how each epoch scored, and the
driver's pruner may stop the fit there instead of after it (docs/tune.md, "Pruning inside a fit"); and the
driver tells the learner how long the fit may take, so that it can stop in time and keep what it learned
(docs/budget.md, "Fits that end in their time").

The learner calls :func:`report_epoch` after each epoch with a score where higher is better, measured on
bags it holds out of its training bags (never the fold's test bags). Outside a driver's trial nothing
listens and the call returns at once, so a learner behaves the same in a script, a test or a final fit.
An anytime learner reads :func:`time_left` between epochs (``None`` outside a driver's fit: no limit).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["FitPruned", "report_epoch", "epoch_listener", "time_left", "time_limit"]

_listener: Callable[[int, float], bool] | None = None
_end: float | None = None  # time.monotonic() by which the current fit, its predictions included, must end


class FitPruned(Exception):
    """Raised by :func:`report_epoch` when the driver stopped the fit; a learner lets it propagate."""


def report_epoch(epoch: int, score: float) -> None:
    """Report ``score`` after ``epoch`` (counted from 0); raises :class:`FitPruned` when the listener
    answers that the fit should stop."""
    if _listener is not None and _listener(int(epoch), float(score)):
        raise FitPruned(f"stopped by the pruner after epoch {epoch + 1} (held-out score {score:.3f})")


@contextmanager
def epoch_listener(listener: Callable[[int, float], bool] | None) -> Iterator[None]:
    """Within the block, every :func:`report_epoch` calls ``listener(epoch, score)`` (``None``: nobody
    listens); a true answer stops the fit. Used by the fit worker, which forwards the reports to the driver."""
    global _listener
    previous, _listener = _listener, listener
    try:
        yield
    finally:
        _listener = previous


def time_left() -> float | None:
    """Seconds until the driver needs the current fit's result, its predictions included (``None``: no limit).
    An anytime learner stops training when its next epoch, and what must follow it, would pass this, and
    keeps what it learned: the driver would otherwise kill the fit and have nothing."""
    return None if _end is None else max(_end - time.monotonic(), 0.0)


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Within the block, :func:`time_left` counts down from ``seconds`` (``None``: no limit). Used by the fit
    worker, with the time its caller gives the task, and by a learner made of other learners, with ``None``
    around its parts' fits: the driver's time is the whole learner's."""
    global _end
    previous, _end = _end, None if seconds is None else time.monotonic() + seconds
    try:
        yield
    finally:
        _end = previous
