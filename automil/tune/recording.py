"""What the tuning loop and the final evaluation tell a :class:`~automil.tune.tracking.Recorder`, recorded on
tracking: every learner's main study one parent run, its trials child runs, its result the parent's figures
and model. The driver hands this recorder down; every tracking call goes through its guard, so tuning goes
on when tracking fails."""

from __future__ import annotations

from automil.records import LearnerResult, TrialRecord
from automil.tune.backend.optuna_trials import records, study_record
from automil.tune.final.ensemble_row import ENSEMBLE
from automil.tune.final.first_model import FIRST_MODEL
from automil.tune.final.leaderboard import PROCEDURE_SPEC
from automil.tune.studies.creation import study_name
from automil.tune.studies.plan import Plan
from automil.tune.tracking import Guarded

__all__ = ["TrackingRecorder"]


class TrackingRecorder:
    """The :class:`~automil.tune.tracking.Recorder` of a tracked run (``guard`` holds its tracking)."""

    def __init__(self, plan: Plan, guard: Guarded):
        self.plan = plan
        self.guard = guard
        self.tracking = guard.tracking  # every call through guard.call
        self.parents = {}

    @property
    def enabled(self) -> bool:
        return self.guard.enabled

    def learner_started(self, spec) -> None:
        if spec.name not in self.parents:
            self.parents[spec.name] = self._parent(study_name(self.plan.dataset, spec.name), spec)

    def trial_done(self, spec, trial: TrialRecord, study_name: str) -> None:
        parent = self.parents.get(spec.name)
        if parent is not None:
            self.guard.call(self.tracking.log_trial, parent, trial, study_name)

    def study_done(self, spec, study, result: LearnerResult | None = None, model=None, bags=None) -> str | None:
        """Log every finished trial of the study not logged yet (by any worker), then ``result``, if given,
        as its result; the URI of the logged model, if any."""
        parent = self._parent(study.study_name, spec)
        if parent is None:
            return None
        found = study_record(study) if result is not None else None
        for trial in found.trials if found is not None else records(study):
            if trial.finished:
                self.guard.call(self.tracking.log_trial, parent, trial, study.study_name)
        if result is None:
            self.guard.call(self.tracking.end_study, parent)
            return None
        self.guard.call(self.tracking.log_folds, parent, self.plan.folds)
        return self.guard.call(self.tracking.log_result, parent, result, model, bags, found)

    def ensemble_done(self, result: LearnerResult, model=None, bags=None) -> str | None:
        return self._row_done(result, ENSEMBLE, model, bags)

    def first_model_done(self, result: LearnerResult, model=None, bags=None) -> str | None:
        """The first model's row (and its model, when given) on a run of its own; the logged model's URI."""
        return self._row_done(result, FIRST_MODEL, model, bags)

    def register(self, model_uri: str) -> str | None:
        """Register the logged model ``model_uri`` as the dataset's new model version; its ``models:/`` URI."""
        return self.guard.call(self.tracking.register_model, self.plan.dataset, model_uri)

    def procedure_done(self, result: LearnerResult, bags) -> None:
        """The procedure's row on a run of its own, beside the learners' (it has no model); ``bags`` are its
        dataset input, as on every learner's run, so that filtering the runs by dataset keeps its row."""
        self._row_done(result, PROCEDURE_SPEC, bags=bags)

    def _row_done(self, result: LearnerResult, spec, model=None, bags=None) -> str | None:
        parent = self._parent(result.study, spec)
        if parent is None:
            return None
        self.guard.call(self.tracking.log_folds, parent, self.plan.folds)
        return self.guard.call(self.tracking.log_result, parent, result, model, bags)

    def _parent(self, name: str, spec) -> str | None:
        return self.guard.call(self.tracking.study_run, name, self.plan.dataset, spec,
                               {"automil.protocol": self.plan.options.protocol})
