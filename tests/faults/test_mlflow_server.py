"""The MLflow tracking server stopped in the middle of a run and started again."""

import time

import pytest

from faults import harness
from faults.harness import Tune

pytestmark = pytest.mark.timeout(300)


def test_mlflow_server_stopped_mid_run_and_restarted_loses_no_trial_and_logs_none_twice(tmp_path, site, journal,
                                                                                         mlflow_server):
    server = mlflow_server
    try:
        tune = Tune(tmp_path / "run", site, journal, learners=("napper",), n_trials=6, tracking_uri=server.url)
        tune.start()
        study = f"{harness.DATASET}/napper"
        harness.wait_for(lambda: [r for r in harness.trial_runs(server.url)
                                  if r.data.tags.get("automil.study") == study], 120, "the first trial in MLflow")
        server.stop()
        # While the server is down the run keeps what it cannot log and logs it once the server answers
        # (test_mlflow_outage.py keeps it away until the run ends).
        time.sleep(2)
        server.start()
        result = tune.wait(240)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        rerun = tune.run(240)  # logs whatever the outage kept out of MLflow
        assert rerun.returncode == 0, rerun.stderr
        trials = tune.trials("napper")
        harness.assert_study_complete(trials, 6)
        logged = harness.assert_tracked_once(server.url, {study: trials})
        harness.report("MLflow server stopped and restarted", {**harness.figures(trials), "in MLflow": logged})
    finally:
        if server.process.poll() is not None:  # leave the session's server running for the next test
            server.start()
