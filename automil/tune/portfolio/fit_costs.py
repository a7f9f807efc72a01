"""What automil knows of a learner's cost before a run measures it: every built-in learner's defaults timed on
two sizes of one generated large-bag task (``fit_costs.json``, made by ``experiments/fit_costs.py`` on 2 cores,
a fit a thread, as a run's workers fit). A run extrapolates them to its own data
(:func:`automil.tune.schedule.probe.predicted_trial_seconds`), to try cheap learners first and to keep a fair
share from a learner that its defaults cannot finish in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["FitCost", "fit_cost"]


@dataclass(frozen=True)
class FitCost:
    """A learner's defaults fitted on ``instances`` instances of ``n_features`` features in ``seconds``: the
    larger of the table's two sizes, the one a run extrapolates from; ``pairs``, its bags' instance pairs (what a
    learner whose work grows with each bag's square extrapolates from)."""

    instances: int
    seconds: float
    n_features: int
    pairs: int

    def describe(self) -> str:
        return (f"automil's fit costs: {self.seconds:.1f} s a fit of its defaults on "
                f"{self.instances:,} instances of {self.n_features} features")


@cache
def _table() -> dict:
    return json.loads(resources.files(__package__).joinpath("fit_costs.json").read_text())


def fit_cost(learner: str) -> FitCost | None:
    """The shipped fit cost of ``learner``'s defaults; ``None`` for a learner not timed (a third-party one, or
    one whose defaults failed or were refused on the task) and for one whose fit passed its limit: that is a
    lower bound at its size only, which extrapolated to other data bounds nothing (pdmisvm-kernel's, past 60 s
    on 4,042 instances of 64 features, predicted 352 s on fox, where its trial ends in seconds)."""
    table = _table()
    entry = table["learners"].get(learner)
    if not entry or not entry["seconds"] or entry["timed_out"]:
        return None
    return FitCost(entry["instances"][-1], entry["seconds"][-1], table["features"], entry["pairs"][-1])
