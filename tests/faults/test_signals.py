"""Signals during a tuning run: a worker or the driver killed, SIGTERM, Ctrl-C. After each, a rerun of the
same command completes the study with every earlier trial kept and none recorded twice."""

import os
import signal

import pytest

from faults import harness
from faults.harness import Tune

pytestmark = pytest.mark.timeout(180)
N_TRIALS = 4


def test_sigkill_of_the_fit_worker_fails_that_trial_and_the_run_goes_on(tmp_path, site, journal):
    tune = Tune(tmp_path, site, journal, learners=("napper",), n_trials=N_TRIALS)
    tune.start()
    pid = tune.wait_for_fit(3)  # the second trial's first fold (2 folds per trial)
    os.kill(pid, signal.SIGKILL)
    result = tune.wait()
    assert result.returncode == 0, result.stderr
    trials = tune.trials("napper")
    killed = [t for t in trials if t.state.name == "FAIL"]
    assert len(killed) == 1 and "SIGKILL" in killed[0].user_attrs["error"], [t.user_attrs for t in killed]
    harness.assert_study_complete(trials, N_TRIALS)
    assert "napper" in result.stdout  # the leaderboard still comes out
    harness.report("SIGKILL of the fit worker", harness.figures(trials))


@pytest.mark.parametrize("jobs", [1, 2])
def test_sigkill_of_the_driver_kills_its_workers_and_a_rerun_completes_the_study(tmp_path, site, any_storage, jobs):
    tune = Tune(tmp_path, site, any_storage, learners=("napper",), n_trials=N_TRIALS, extra=("--jobs", str(jobs)))
    tune.start()
    tune.wait_for_fit(5)  # the third trial is running
    os.kill(tune.process.pid, signal.SIGKILL)
    assert tune.wait().returncode == -signal.SIGKILL
    workers = set(tune.fit_pids())
    harness.wait_for(lambda: all(map(harness.process_gone, workers)), 10, "the orphaned fit workers to die")
    running = [t.number for t in tune.trials("napper") if t.state.name == "RUNNING"]
    assert len(harness.snapshot(tune.trials("napper"))) >= 2 - jobs + 1 and 1 <= len(running) <= jobs
    trials = tune.rerun_completes("napper", N_TRIALS, f"SIGKILL of the driver (--jobs {jobs})", workers=jobs)
    stale = sorted(t.number for t in trials if t.user_attrs.get("stale"))
    assert stale == running, "the trials the killed processes were running are failed on rerun, not left open"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_stops_with_a_message_and_keeps_every_finished_trial(tmp_path, site, journal, signum):
    tune = Tune(tmp_path, site, journal, learners=("napper",), n_trials=N_TRIALS)
    tune.start()
    worker = tune.wait_for_fit(5)
    # A terminal's Ctrl-C goes to the whole foreground process group; `kill` and service managers send
    # SIGTERM to the process group too.
    os.killpg(tune.process.pid, signum)
    result = tune.wait(60)
    # docs/reliability.md: within a run SIGTERM acts as Ctrl-C, one line and exit 130 (not the shell's 143).
    assert result.returncode == 130, (result.returncode, result.stderr)
    assert "automil: interrupted; every completed trial is kept in" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    harness.wait_for(lambda: harness.process_gone(worker), 10, "the fit worker to end")
    running = [t.number for t in tune.trials("napper") if t.state.name == "RUNNING"]
    assert not running, "the running trial is closed on exit"
    tune.rerun_completes("napper", N_TRIALS, f"{signal.Signals(signum).name} of the driver")
