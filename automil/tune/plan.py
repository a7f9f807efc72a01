"""The studies of one run and its deadlines."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from automil.tune.options import FINAL_SHARE, TuneOptions

__all__ = ["Plan"]


@dataclass
class Plan:
    """Everything a tuning process needs; picklable so that ``--jobs`` processes get the same plan."""

    dataset: str
    learners: list[str]
    options: TuneOptions
    assignment: np.ndarray
    start: float  # time.time() when the run began

    def tuning_deadline(self, reserve: float = 0.0) -> float | None:
        """When tuning stops: ``reserve`` seconds (the final evaluation's estimated cost) before the end of
        the budget, within the bounds of ``FINAL_SHARE``; ``None`` without ``--timeout``."""
        t = self.options.timeout
        if t is None:
            return None
        low, high = FINAL_SHARE
        return self.start + t - min(max(reserve, low * t), high * t)

    @property
    def final_deadline(self) -> float:
        t = self.options.timeout
        return math.inf if t is None else self.start + t
