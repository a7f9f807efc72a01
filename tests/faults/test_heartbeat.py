"""A worker killed on one machine: on PostgreSQL its trial is failed by Optuna's heartbeat and its
parameters are run again by a worker still alive."""

import os
import signal

import pytest

from faults import harness
from faults.harness import Tune

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(300)]


def test_a_worker_killed_with_sigkill_has_its_trial_failed_and_retried_by_another(tmp_path, site, postgres):
    killed = Tune(tmp_path / "a", site, postgres, learners=("napper",), n_trials=1000)
    killed.start()
    killed.wait_for_fit(3)  # its second trial is running
    os.killpg(killed.process.pid, signal.SIGKILL)  # the driver and its fit worker, with no word to the store
    assert killed.wait().returncode == -signal.SIGKILL
    (orphan,) = [t for t in killed.trials("napper") if t.state.name == "RUNNING"]
    _move_to_another_machine(postgres, orphan)

    # Another machine's worker goes on with the study; the grace period later, its next ask fails the
    # orphan and runs its parameters again.
    survivor = Tune(tmp_path / "b", site, postgres, learners=("napper",), n_trials=1000)
    survivor.start()
    try:
        retry = harness.wait_for(lambda: _finished_retry(survivor.trials("napper"), orphan.number), 150,
                                 f"trial {orphan.number} to be failed and retried", interval=1.0)
    finally:
        survivor.process.send_signal(signal.SIGINT)
        survivor.wait()
    trials = survivor.trials("napper")
    assert sorted(t.number for t in trials) == list(range(len(trials))), "no trial recorded twice"
    (failed,) = [t for t in trials if t.number == orphan.number]
    assert failed.state.name == "FAIL" and failed.params == orphan.params
    assert retry.state.name == "COMPLETE" and retry.params == orphan.params
    assert orphan.number not in {t.number for t in harness.counted(trials)}, "the orphan does not count"
    assert all(t.state.is_finished() for t in trials if t.number <= retry.number), "nothing left open before"
    harness.report("SIGKILL of a worker on PostgreSQL (heartbeat)", harness.figures(trials))


def _move_to_another_machine(storage: str, trial):
    """Name the trial's process as one of another host: both workers run here, and a run on the trial's
    own machine would see at once, by its pid, that the process is gone."""
    from automil.tune.backend.optuna_storage import open_storage

    _, pid, start = trial.user_attrs["worker"].split(":")
    open_storage(storage).set_trial_user_attr(trial._trial_id, "worker", f"another-machine:{pid}:{start}")


def _finished_retry(trials, number: int):
    """The finished trial that ran the parameters of trial ``number`` again, if any."""
    return next((t for t in trials if t.state.is_finished() and t.system_attrs.get("failed_trial") == number
                 and t.number != number), None)
