"""The plan of a run: what every tuning process needs to know, handed to each of them whole."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from automil.endpoints import TASK_METRICS, label_counts
from automil.evaluation.folds_file import RunFolds
from automil.records.protocol import Protocol
from automil.tune.options import TuneOptions
from automil.tune.studies.trial_folds import TrialFolds

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
    # the main study's inner hold-out under the hold-out protocol (trial_folds.inner_holdout); None: 3-fold CV
    validation: np.ndarray | None = None
    # the learners whose fits end in their time (LearnerSpec.anytime): their low fidelity is their epochs or
    # trees on all the bags, so they skip the ladder's rungs
    anytime: tuple[str, ...] = ()
    # the seconds of each learner's first trial on all the bags (its defaults) as its shipped fit cost predicts
    # them (automil.tune.schedule.probe.predicted_trial_seconds); a learner without one is absent
    predicted_seconds: dict[str, float] = field(default_factory=dict)
    task: str = "classification"  # the labels' (automil.endpoints.task_of)

    def __post_init__(self):
        if self.options.protocol == Protocol.AUTO:
            raise ValueError("a plan needs the protocol decided on its bags: pass options.for_data(bags), "
                             "not --protocol auto")

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metrics every fold of the run is scored with: its task's (``automil.endpoints.TASK_METRICS``)."""
        return TASK_METRICS[self.task]

    @property
    def classification(self) -> bool:
        """Whether the run's bags carry class labels: calibration, prediction sets, ensembles and the first model
        serve classification only."""
        return self.task == "classification"

    @property
    def prior(self) -> tuple[str, ...]:
        """The learners of the portfolio, in the order of their first member: the order their first trials run."""
        return tuple(dict.fromkeys(m.learner for m in self.portfolio))

    def trial_folds(self, exclude: int | None) -> TrialFolds:
        """What a trial that never sees fold ``exclude`` fits and scores on: the main study's inner hold-out
        under the hold-out protocol (``exclude`` its held-out fold), else the other folds cross-validated."""
        if self.validation is not None and exclude == self.options.held_out:
            return TrialFolds.held_out(self.folds.tuning, exclude, self.validation)
        return TrialFolds.cross_validation(self.folds.tuning, exclude)

    def inner_bags(self, y) -> list[np.ndarray]:
        """For every outer split (``options.outer_folds``), the bags its inner scores cover (its trials', its
        refit's, the ensemble's), counted as :func:`~automil.endpoints.label_counts` counts them: the
        uncertainty the procedure's chance rule weighs an inner score by."""
        return [self._scored_bags(y, i) for i in self.options.outer_folds]

    def tuning_bags(self, y) -> np.ndarray:
        """The bags the main studies' tuning scores cover (all bags; under the hold-out protocol its one outer
        split's inner ones), counted as :func:`~automil.endpoints.label_counts` counts them: what the run's
        choice weighs them by."""
        return self._scored_bags(y, self.options.held_out)

    def _scored_bags(self, y, exclude: int | None) -> np.ndarray:
        return label_counts(np.asarray(y)[self.trial_folds(exclude).order])

