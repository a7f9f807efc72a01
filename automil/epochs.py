"""Progress inside one fit: a learner that trains in epochs tells the driver how each epoch scored, and the
driver's pruner may stop the fit there instead of after it (docs/tune.md, "Pruning inside a fit").

The learner calls :func:`report_epoch` after each epoch with a score where higher is better, measured on
bags it holds out of its training bags (never the fold's test bags). Outside a driver's trial nothing
listens and the call returns at once, so a learner behaves the same in a script, a test or a final fit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["FitPruned", "report_epoch", "epoch_listener"]

_listener: Callable[[int, float], bool] | None = None


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
