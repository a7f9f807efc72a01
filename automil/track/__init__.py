"""MLflow tracking, and only here: studies, trials and final results as runs of a tracking store, the
pyfunc model, the figures, the results table read back from the store, and the MLflow UI.

It takes the driver's plain records (:mod:`automil.records`) and never imports Optuna.
"""

from automil.lazy import lazy_exports

_EXPORTS = {"Tracker": "automil.track.writing.tracker", "BagModel": "automil.track.writing.model",
            "default_tracking_uri": "automil.track.store.locations", "ui_command": "automil.track.server"}

__all__ = list(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
