"""A process killed exactly between a trial's creation and its next write (the kill that used to leave a
RUNNING trial without an owner, which no rerun could fail or finish), on every storage: the rerun fails
the killed trial as stale and completes the study, nothing lost or doubled."""

import os
import signal

import pytest

from automil.tune.workers.processes import STOP_AFTER_ASK_ENV
from faults import harness
from faults.harness import Tune

pytestmark = pytest.mark.timeout(300)
N_TRIALS = 4


def test_a_kill_right_after_a_trial_is_created_leaves_a_trial_the_rerun_fails_and_replaces(tmp_path, site,
                                                                                           any_storage):
    tune = Tune(tmp_path, site, any_storage, n_trials=N_TRIALS, env={STOP_AFTER_ASK_ENV: "3"})
    tune.start()
    harness.wait_for(lambda: harness.process_stopped(tune.process.pid), 180,
                     "automil tune to stop after its third ask")
    os.killpg(tune.process.pid, signal.SIGKILL)
    assert tune.wait().returncode == -signal.SIGKILL
    (killed,) = [t for t in tune.trials() if t.state.name == "RUNNING"]
    assert killed.user_attrs["worker"], "the trial was created without its owner"
    del tune.env[STOP_AFTER_ASK_ENV]
    trials = tune.rerun_completes("centroid", N_TRIALS, "SIGKILL between a trial's creation and its first write")
    assert [t.number for t in trials if t.user_attrs.get("stale")] == [killed.number]
