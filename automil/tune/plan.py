"""The studies of one run and how the time budget is shared between them."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from automil.tune.options import TUNING_SHARE, TuneOptions

__all__ = ["Unit", "Plan", "schedule", "share_time"]


@dataclass
class Unit:
    """One study to tune: a learner on all bags (``split=None``) or on one outer split's training bags.

    ``deadline``: no trial starts after it; ``hard_stop``: a fit still running then is stopped (its
    trial is not counted). Both are set when a process starts the unit (see ``share_time``).
    """

    learner: str
    split: int | None
    deadline: float = math.inf
    learner_deadline: float = math.inf
    hard_stop: float = math.inf


@dataclass
class Plan:
    """Everything a tuning process needs; picklable so that ``--jobs`` processes get the same plan."""

    dataset: str
    learners: list[str]
    options: TuneOptions
    assignment: np.ndarray
    start: float  # time.time() when the run began
    units: list[Unit] = field(default_factory=list)

    @property
    def tuning_deadline(self) -> float | None:
        t = self.options.timeout
        return None if t is None else self.start + TUNING_SHARE * t

    @property
    def final_deadline(self) -> float:
        t = self.options.timeout
        return math.inf if t is None else self.start + t



def schedule(plan: Plan) -> list[Unit]:
    """The studies in tuning order: per learner, all bags first (its best parameters give the repeated CV
    and the logged model), then the outer splits of nested cross-validation."""
    splits = list(range(plan.options.folds)) if plan.options.protocol == "nested" else []
    return [Unit(learner, split) for learner in plan.learners for split in [None, *splits]]


def share_time(plan: Plan, units: list[Unit], u: int):
    """Set the deadlines of study ``u`` from the tuning time left when it starts.

    Each learner gets an equal share of the time left when its first study starts, and each of its
    studies an equal share of what is left of that: time a study or a learner leaves unused goes to the
    ones after it. No trial starts after a study's deadline; a fit still running half a learner's share
    past the learner's deadline is stopped (so a slow learner cannot eat the others' budget, and fits are
    killed at most once per learner for the budget's sake).
    """
    if plan.tuning_deadline is None:
        return
    now = time.time()
    unit = units[u]
    if u == 0 or units[u - 1].learner != unit.learner:
        learners_left = len({v.learner for v in units[u:]})
        share = max(plan.tuning_deadline - now, 0.0) / learners_left
        unit.learner_deadline = now + share
        unit.hard_stop = min(now + 1.5 * share, plan.tuning_deadline)
    else:
        unit.learner_deadline, unit.hard_stop = units[u - 1].learner_deadline, units[u - 1].hard_stop
    studies_left = sum(v.learner == unit.learner for v in units[u:])
    unit.deadline = now + max(unit.learner_deadline - now, 0.0) / studies_left
