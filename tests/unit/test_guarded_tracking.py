"""Guarding a tracking call is one mechanism around any call, and the no-op answers every call of the
protocol: adding a call to ``Tracking`` needs nothing here."""

import pytest

from automil.records import TrackingBacklog
from automil.tune.tracking import TRACKING_CALLS, Guarded, Tracking, Untracked


class Heard:
    """A listener that keeps its messages."""

    def __init__(self):
        self.messages = []

    def message(self, text):
        self.messages.append(text)


class Flaky:
    """A tracking whose trials fail and whose server goes away and comes back with the calls."""

    def __init__(self, backlogs):
        self.backlogs = list(backlogs)
        self.folds = []

    def log_trial(self, parent_run_id, trial, study_name):
        raise OSError("disk full")

    def log_folds(self, parent_run_id, folds):
        self.folds.append((parent_run_id, folds))

    def flush(self):
        return None

    def backlog(self):
        return self.backlogs.pop(0)


def test_a_failing_call_is_reported_and_tuning_goes_on():
    heard = Heard()
    guard = Guarded(Flaky([None, None]), heard)
    assert guard.call(guard.tracking.log_trial, "run", None, "fox/sil") is None
    assert heard.messages == ["warning: MLflow log_trial failed (OSError: disk full); tuning goes on and a rerun "
                              "logs what is missing"]
    guard.call(guard.tracking.log_folds, "run", "folds")
    assert guard.tracking.folds == [("run", "folds")] and len(heard.messages) == 1


def test_the_listener_hears_once_when_the_server_goes_away_and_once_when_it_is_back():
    away = TrackingBacklog(2, "/tmp/kept.jsonl", "http://mlflow:5000", "ConnectionRefusedError")
    heard = Heard()
    guard = Guarded(Flaky([away, away, None]), heard)
    for _ in range(3):
        guard.call(guard.tracking.log_folds, "run", "folds")
    assert len(heard.messages) == 2
    assert "does not answer (ConnectionRefusedError)" in heard.messages[0] and "/tmp/kept.jsonl" in heard.messages[0]
    assert heard.messages[1] == "MLflow at http://mlflow:5000 answers again: what was kept back is logged"


def test_untracked_answers_every_call_of_the_protocol_with_nothing():
    calls = {name for name in vars(Tracking) if callable(vars(Tracking)[name]) and not name.startswith("_")}
    assert calls == TRACKING_CALLS and {"log_trial", "log_result", "backlog"} <= calls
    untracked = Untracked()
    assert all(getattr(untracked, name)("a", "b") is None for name in calls)
    with pytest.raises(AttributeError, match="log_trail"):
        untracked.log_trail("run")
    assert not Guarded(untracked, Heard()).enabled and Guarded(Flaky([]), Heard()).enabled
