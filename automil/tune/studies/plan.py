"""The plan of a run: what every tuning process needs to know, handed to each of them whole."""

from __future__ import annotations

from dataclasses import dataclass

from automil.evaluation.folds_file import RunFolds
from automil.records.protocol import Protocol
from automil.tune.options import TuneOptions

__all__ = ["Plan"]


@dataclass
class Plan:
    """Everything a tuning process needs; picklable so that ``--jobs`` processes get the same plan."""

    dataset: str
    learners: list[str]
    options: TuneOptions
    folds: RunFolds  # its tuning folds are the studies' stored ones
    start: float  # time.time() when the run began
    portfolio: tuple = ()  # the portfolio's members for this data (automil.tune.portfolio.members.Member)
    chance: float | None = None  # what the metric scores by chance on these bags (automil.evaluation.chance)

    def __post_init__(self):
        if self.options.protocol == Protocol.AUTO:
            raise ValueError("a plan needs the protocol decided on its bags: pass options.for_data(bags), "
                             "not --protocol auto")

    @property
    def prior(self) -> tuple[str, ...]:
        """The learners of the portfolio, in the order of their first member: the order their first trials run."""
        return tuple(dict.fromkeys(m.learner for m in self.portfolio))
