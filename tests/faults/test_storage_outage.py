"""PostgreSQL restarted mid-run: the run waits for it and goes on; away past the wait, one clear line."""

import time

import pytest

from faults import harness
from faults.harness import Tune

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def managed(postgres):
    if not harness.script_manages(postgres):
        pytest.skip("the test PostgreSQL server is not the one .ci/postgres.sh manages: not stopping it")
    return postgres


def _stopped_for(tune: Tune, seconds: float):
    """Stop the server once the run's third fit started, start it again ``seconds`` later."""
    tune.start()
    tune.wait_for_fit(3)
    before = harness.snapshot(tune.trials("napper"))
    harness.postgres_script("stop")
    try:
        time.sleep(seconds)
    finally:
        harness.postgres_script("start")
    return before


def test_a_run_waits_through_a_postgresql_restart_and_completes_without_a_rerun(tmp_path, site, managed):
    tune = Tune(tmp_path, site, managed, learners=("napper",), n_trials=8)
    before = _stopped_for(tune, 20)
    result = tune.wait(180)
    assert result.returncode == 0, result.stderr
    trials = tune.trials("napper")
    harness.assert_study_complete(trials, 8, before)
    assert "napper" in result.stdout  # the leaderboard comes out
    harness.report("PostgreSQL stopped 20 s (waited, finished)", harness.figures(trials, before))


def test_a_database_away_past_the_wait_stops_the_run_with_one_line_and_a_rerun_completes(tmp_path, site, managed):
    tune = Tune(tmp_path, site, managed, learners=("napper",), n_trials=8, env={"AUTOMIL_STORAGE_WAIT": "3"})
    _stopped_for(tune, 10)
    result = tune.wait(120)
    assert result.returncode == 1
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("automil: error:")]
    assert "did not answer for 3 s" in line and "every finished trial is kept" in line, result.stderr
    tune.env.pop("AUTOMIL_STORAGE_WAIT")
    tune.rerun_completes("napper", 8, "PostgreSQL stopped 10 s, past AUTOMIL_STORAGE_WAIT=3 (stopped)")
