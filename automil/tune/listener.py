"""How the driver reports progress: a listener it calls, never a print. The command line implements one
for the terminal (:class:`automil.cli.progress.Progress`); :class:`Silent` is the default."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from automil.track.records import LearnerResult, TrialRecord

__all__ = ["Listener", "StudyProgress", "Silent"]


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


class Listener(Protocol):
    """What the driver tells whoever watches a run."""

    def message(self, line: str) -> None:
        """A status line (start of the run, a warning)."""

    def trial(self, study: StudyProgress) -> None:
        """A trial of ``study`` finished."""

    def tuned(self, study: StudyProgress) -> None:
        """The last study of a learner is tuned (``study`` is its study on all bags)."""

    def learner_done(self, result: LearnerResult) -> None:
        """A learner's final evaluation is done."""


class Silent:
    """A listener that ignores everything: ``tune`` called as a library, and its helper processes."""

    def message(self, line: str) -> None:
        pass

    def trial(self, study: StudyProgress) -> None:
        pass

    def tuned(self, study: StudyProgress) -> None:
        pass

    def learner_done(self, result: LearnerResult) -> None:
        pass
