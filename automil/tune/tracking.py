"""The driver's calls to tracking: a failure is reported and tuning goes on."""

from __future__ import annotations

from automil.tune.options import TuneOptions
from automil.uris import shown_storage

__all__ = ["open_tracker", "track"]


def open_tracker(options: TuneOptions):
    """The MLflow tracker; a store that cannot be opened stops the run before any tuning, since
    results that silently go untracked are lost to the UI and the report."""
    if not options.track:
        return None
    from automil.track import Tracker

    try:
        return Tracker(options.tracking_uri)
    except Exception as error:
        store = shown_storage(options.tracking_uri) if options.tracking_uri else "(default)"
        reason = str(error) if store in str(error) else f"cannot open the MLflow tracking store {store}: {error}"
        raise RuntimeError(f"{reason} (give a writable --tracking-uri, or --no-track to tune without tracking)"
                           ) from error


def track(tracker, progress, method, *args):
    """Call the tracker; a failure is reported once and tuning goes on (a rerun logs what is missing)."""
    if tracker is None:
        return None
    try:
        return getattr(tracker, method)(*args)
    except Exception as error:  # noqa: BLE001
        progress(f"warning: MLflow {method} failed ({type(error).__name__}: {error}); tuning goes on and a "
                 "rerun logs what is missing")
        return None
