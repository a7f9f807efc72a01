"""The Optuna driver: studies, trials in killable workers, the time budget, the final evaluation and the
leaderboard. It hands tracking plain records and reports progress to a listener; it never prints and never
imports MLflow.

Entry points: :func:`automil.tune.driver.tune`, :class:`automil.tune.options.TuneOptions` and
:func:`automil.tune.options.read_study_file` (``from automil.tune import tune`` works too).
"""

from automil.lazy import lazy_exports

_EXPORTS = {"tune": "automil.tune.driver", "TuneOptions": "automil.tune.options",
            "read_study_file": "automil.tune.options", "study_name": "automil.tune.studies.plan"}

__all__ = list(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
