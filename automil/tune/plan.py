"""The studies of one run and its deadlines."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from automil.tune.options import TUNING_SHARE, TuneOptions

__all__ = ["Plan"]


@dataclass
class Plan:
    """Everything a tuning process needs; picklable so that ``--jobs`` processes get the same plan."""

    dataset: str
    learners: list[str]
    options: TuneOptions
    assignment: np.ndarray
    start: float  # time.time() when the run began

    @property
    def tuning_deadline(self) -> float | None:
        t = self.options.timeout
        return None if t is None else self.start + TUNING_SHARE * t

    @property
    def final_deadline(self) -> float:
        t = self.options.timeout
        return math.inf if t is None else self.start + t
