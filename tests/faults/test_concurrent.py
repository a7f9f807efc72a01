"""Two ``automil tune`` processes on one study, on every storage: while one holds a trial it has just
created (stopped right after its ask), the other runs trials beside it and leaves that trial alone; both
finish, and the study holds every trial once."""

import os
import signal

import pytest

from automil.tune.workers.processes import STOP_AFTER_ASK_ENV
from faults import harness
from faults.harness import Tune

pytestmark = pytest.mark.timeout(400)
N_TRIALS = 6


def test_a_second_worker_runs_beside_a_paused_one_and_every_trial_is_recorded_once(tmp_path, site, any_storage):
    paused = Tune(tmp_path / "a", site, any_storage, learners=("napper",), n_trials=N_TRIALS,
                  env={STOP_AFTER_ASK_ENV: "2"})
    paused.start()
    harness.wait_for(lambda: harness.process_stopped(paused.process.pid), 180,
                     "the first worker to stop after its second ask")
    other = Tune(tmp_path / "b", site, any_storage, learners=("napper",), n_trials=N_TRIALS)
    try:
        result = other.run(timeout=300)
        assert result.returncode == 0, result.stderr
        (held,) = [t for t in other.trials("napper") if t.state.name == "RUNNING"]
        assert held.number == 1, "the paused worker's trial is the only one open, and the other left it alone"
    finally:
        os.killpg(paused.process.pid, signal.SIGCONT)
    resumed = paused.wait(300)
    assert resumed.returncode == 0, resumed.stderr
    trials = other.trials("napper")
    harness.assert_study_complete(trials, N_TRIALS, workers=2)
    owners = {t.user_attrs["worker"] for t in trials}
    assert len(owners) == 2, "both workers recorded trials"
    harness.report(f"two workers on one study ({any_storage.split(':')[0].split('+')[0]})", harness.figures(trials))
