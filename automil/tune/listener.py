"""How the driver reports progress: a listener it calls, never a print. The command line implements one
for the terminal (:class:`automil.cli.progress.Progress`); :class:`Silent` is the default."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from automil.records import LearnerResult, TrackingBacklog, TrialRecord

__all__ = ["Listener", "StudyProgress", "LearnerStanding", "Standing", "Silent"]


@dataclass(frozen=True)
class StudyProgress:
    """Where tuning stands in one study: its learner and outer split (``None``: all bags), the run's
    budget and metric, and the study's trials so far."""

    learner: str
    split: int | None
    folds: int
    n_trials: int | None
    metric: str
    trials: list[TrialRecord]


@dataclass(frozen=True)
class LearnerStanding:
    """One learner as the budget sees it: its counted trials over all its studies and the most it may
    have (``None``: no ``--n-trials`` cap), its best tuning score, and its ``phase``: ``portfolio`` (waiting
    for its first portfolio point), ``defaults`` (waiting for its defaults), ``screening`` or ``screened`` (the
    ladder's rungs), ``contender`` (it gets time: close to the leader, or under the equal allocation any
    learner with a score), ``behind``, ``full``, ``no score`` or ``too slow``."""

    learner: str
    trials: int
    planned: int | None
    best: float | None
    phase: str


@dataclass(frozen=True)
class Standing:
    """Where the tuning of a run stands: the learner whose trial runs now (``None`` once tuning ends),
    every learner's standing, the seconds since the run began and the tuning seconds left (``None``:
    no ``--timeout``)."""

    running: str | None
    learners: list[LearnerStanding]
    metric: str
    elapsed: float
    left: float | None


class Listener(Protocol):
    """What the driver tells whoever watches a run."""

    def message(self, line: str) -> None:
        """A status line (start of the run, a warning)."""

    def standing(self, standing: Standing) -> None:
        """Where tuning stands, before every trial and once when tuning ends."""

    def tuned(self, study: StudyProgress) -> None:
        """Tuning has ended; called once per learner with its study on all bags."""

    def learner_done(self, result: LearnerResult) -> None:
        """A learner's final evaluation is done."""

    def unlogged(self, backlog: TrackingBacklog) -> None:
        """The run has ended with records that tracking could not log (its server did not answer)."""


class Silent:
    """A listener that ignores everything: ``tune`` called as a library, and its helper processes."""

    def message(self, line: str) -> None:
        pass

    def standing(self, standing: Standing) -> None:
        pass

    def tuned(self, study: StudyProgress) -> None:
        pass

    def learner_done(self, result: LearnerResult) -> None:
        pass

    def unlogged(self, backlog: TrackingBacklog) -> None:
        pass
