"""What the driver needs from tracking, declared here so that the driver never imports MLflow: a
:class:`Tracking` object (``automil.track.Tracker`` is one) made by a factory the caller passes to
``tune``, and the guard every call goes through. Only :mod:`automil.tune.driver` calls a ``Tracking``;
the tuning loop and the final evaluation tell a :class:`Recorder` what happened, in their own words."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from automil.evaluation.folds_file import RunFolds
from automil.records import LearnerResult, StudyRecord, TrackingBacklog, TrialRecord
from automil.tune.listener import Listener

__all__ = ["Tracking", "Untracked", "Guarded", "open_tracking", "Recorder", "TRACKING_CALLS"]

T = TypeVar("T")


class Tracking(Protocol):
    """Records studies, trials and results; every call names the study's parent run explicitly."""

    def study_run(self, study_name: str, dataset: str, learner_spec, tags: dict | None = None) -> str:
        """The id of the study's parent run, created on first use and reused on resume."""

    def log_trial(self, parent_run_id: str, trial: TrialRecord, study_name: str) -> str:
        """Record a finished trial once (idempotent per trial number); its run id."""

    def log_folds(self, parent_run_id: str, folds: RunFolds) -> None:
        """Record the folds the result is scored on (``folds.json``), before the result."""

    def log_result(self, parent_run_id: str, result: LearnerResult, model=None, bags=None,
                   study: StudyRecord | None = None) -> str | None:
        """Record the study's final result (and its fitted best model), then close the parent run; the
        logged model's URI, if a model was given."""

    def register_model(self, dataset: str, model_uri: str) -> str:
        """Register a logged model as the dataset's chosen model (a new version); its ``models:/`` URI."""

    def refresh_comparison(self, dataset: str, chosen: LearnerResult | None = None) -> None:
        """After a tune: rank the dataset's learners and rewrite their comparison (the experiment's
        leaderboard and chart), naming ``chosen``, the row of the learner whose model was registered."""

    def end_study(self, parent_run_id: str) -> None:
        """Close the parent run after a sweep that logged no result."""

    def flush(self) -> None:
        """Try now to log what the server did not take (at the end of a run)."""

    def backlog(self) -> TrackingBacklog | None:
        """What is kept because the server did not answer (``None``: nothing)."""


class Untracked:
    """Tracking switched off (``--no-track``): every call of :class:`Tracking` records nothing and returns
    ``None`` (there is no parent run)."""

    def __getattr__(self, name: str):
        if name not in TRACKING_CALLS:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        return _nothing


def _nothing(*args, **kwargs) -> None:
    return None


# The calls of the protocol, the no-op answers to each
TRACKING_CALLS = frozenset(name for name in vars(Tracking) if not name.startswith("_"))


class Guarded:
    """The driver's tracking: every call goes through :meth:`call`, where a failure is reported to the
    listener and tuning goes on (a rerun logs what is missing). When the tracking starts or stops keeping
    calls back (its server away, then back), the listener hears it once each time."""

    def __init__(self, tracking: Tracking, listener: Listener):
        self.tracking = tracking
        self.listener = listener
        self.held: TrackingBacklog | None = None

    @property
    def enabled(self) -> bool:
        """Whether anything is recorded (the final evaluation fits a model to log only then)."""
        return not isinstance(self.tracking, Untracked)

    def call(self, method: Callable[..., T], *args) -> T | None:
        """``method(*args)``, a call of :attr:`tracking`; ``None`` when it fails."""
        try:
            return method(*args)
        except Exception as error:  # noqa: BLE001 - tracking never stops tuning
            self.listener.message(f"warning: MLflow {method.__name__} failed ({type(error).__name__}: {error}); "
                                  "tuning goes on and a rerun logs what is missing")
            return None
        finally:
            self._note_backlog()

    def flush(self) -> TrackingBacklog | None:
        """A last attempt to log what was kept back; what is still kept."""
        self.call(self.tracking.flush)
        return self.held

    def _note_backlog(self):
        backlog = self.tracking.backlog()
        if backlog is not None and self.held is None:
            self.listener.message(f"warning: MLflow at {backlog.tracking_uri} does not answer ({backlog.reason}); "
                                  f"tuning goes on, and what it cannot log is kept in {backlog.path} and "
                                  "logged once it answers")
        elif backlog is None and self.held is not None:
            self.listener.message(f"MLflow at {self.held.tracking_uri} answers again: what was kept back is logged")
        self.held = backlog


def open_tracking(factory: Callable[[], Tracking] | None, listener: Listener) -> Guarded:
    """The tracking a factory opens (``None``: untracked). A factory that fails stops the run: ``tune``
    calls this before any tuning, since results that silently go untracked are lost to the UI and the
    report."""
    return Guarded(Untracked() if factory is None else factory(), listener)


class Recorder(Protocol):
    """What the tuning loop and the final evaluation tell tracking (the driver records it)."""

    @property
    def enabled(self) -> bool:
        """Whether anything is recorded (the final evaluation fits the models to log only then)."""

    def learner_started(self, spec) -> None:
        """The loop is about to run a trial of the learner ``spec``."""

    def trial_done(self, spec, trial: TrialRecord, study_name: str) -> None:
        """A trial of the learner's study on all bags finished."""

    def study_done(self, spec, study, result: LearnerResult | None = None, model=None, bags=None) -> str | None:
        """The learner's final evaluation is done: every finished trial of its Optuna ``study`` (on all
        bags) and its ``result`` with its ``model`` (``None``: a stored result reused, already logged); the
        URI of the logged model, if any."""

    def ensemble_done(self, result: LearnerResult, model=None, bags=None) -> str | None:
        """The ensemble's result and model; the URI of the logged model, if any."""

    def first_model_done(self, result: LearnerResult, model=None, bags=None) -> str | None:
        """The first model's result and model (:mod:`automil.tune.final.first_model`); the URI of the logged
        model, if any."""

    def register(self, model_uri: str) -> str | None:
        """Register a logged model as the dataset's model (a new version); its ``models:/`` URI, if registered."""
