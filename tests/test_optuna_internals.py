"""Pins each use of Optuna's private parts (``automil.tune.backend.optuna_internals``) on the installed
Optuna, on a journal file and on sqlite: a release that changes one fails here, not in trial bookkeeping."""

import json

import optuna
import pytest

from automil.tune.backend.optuna_internals import (
    heartbeat_enabled,
    owned_trials,
    replace_trial_creation,
    study_storage,
    trial_id,
)
from automil.tune.backend.optuna_storage import open_storage

OWNER = {"worker": "host:123:456"}


@pytest.fixture(params=["journal", "sqlite"])
def storage(request, tmp_path):
    kind = request.param
    return kind, open_storage(f"journal:{tmp_path / 'a.journal'}" if kind == "journal"
                              else f"sqlite:///{tmp_path / 'a.db'}"), tmp_path


def test_the_study_s_storage_and_the_trial_s_id_are_those_the_storage_knows(storage):
    kind, store, _ = storage
    study = optuna.create_study(study_name="s", storage=store)
    trial = study.ask()
    assert isinstance(study_storage(study), optuna.storages.BaseStorage)
    study_id = store.get_study_id_from_name("s")
    assert trial_id(trial) == store.get_trial_id_from_study_id_trial_number(study_id, trial.number)
    assert trial_id(study.trials[0]) == trial_id(trial)
    study_storage(study).set_trial_user_attr(trial_id(trial), "k", 1)
    assert study.trials[0].user_attrs == {"k": 1}
    assert heartbeat_enabled(study_storage(study)) is (kind == "sqlite")  # automil opens RDB with heartbeats


def test_every_trial_ask_makes_or_enqueue_queues_goes_through_the_replaced_creation(storage):
    _, store, _ = storage
    seen = []

    def wrap(create):
        def counted(study_id, template=None):
            seen.append(template is None)
            return create(study_id, template)
        return counted

    replace_trial_creation(store, wrap)
    study = optuna.create_study(study_name="s", storage=store)
    study.enqueue_trial({"x": 1.0})
    study.ask()  # the queued one: no creation
    study.ask()  # a new one
    assert seen == [False, True]


def test_a_trial_ask_makes_carries_its_owner_from_its_first_record(storage):
    kind, store, tmp_path = storage
    owned_trials(store, lambda: dict(OWNER))
    study = optuna.create_study(study_name="s", storage=store)
    trial = study.ask()
    assert study.trials[0].user_attrs == OWNER and study.trials[0].state.name == "RUNNING"
    if kind == "journal":  # one record: the creation holds the owner (op code 4 creates a trial)
        (created,) = [log for log in map(json.loads, (tmp_path / "a.journal").read_text().splitlines())
                      if log["op_code"] == 4]
        assert created["user_attrs"] == OWNER and trial.number == 0


def test_a_queued_trial_is_named_before_it_turns_running(storage):
    _, store, _ = storage
    claimed = []
    set_state = store.set_trial_state_values

    def watched(trial_id_, state, values=None):
        claimed.append(dict(store.get_trial(trial_id_).user_attrs))
        return set_state(trial_id_, state, values)

    store.set_trial_state_values = watched  # Optuna's own claim: sees the trial as it is made RUNNING
    owned_trials(store, lambda: dict(OWNER))
    study = optuna.create_study(study_name="s", storage=store)
    study.enqueue_trial({"x": 1.0})
    study.ask()
    assert claimed == [OWNER]
    assert study.trials[0].system_attrs["fixed_params"] == {"x": 1.0}
