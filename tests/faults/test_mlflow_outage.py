"""The MLflow tracking server killed mid-run and away until the run ends: tuning goes on, the run names what
it could not log, and a replay once the server is back logs every trial and result exactly once."""

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from mlflow import MlflowClient

from automil.track.outage.tolerant import replay
from faults import harness
from faults.harness import Tune

pytestmark = pytest.mark.timeout(300)

LEARNERS = ("napper", "centroid")


def test_a_run_outlasts_a_dead_mlflow_server_and_a_replay_logs_every_trial_and_result_once(tmp_path, site, journal,
                                                                                           mlflow_store):
    server = harness.MlflowServer(mlflow_store(tmp_path / "mlflow"), tmp_path / "mlflow")
    server.start()
    try:
        tune = Tune(tmp_path / "run", site, journal, learners=LEARNERS, n_trials=8, tracking_uri=server.url)
        tune.start()
        first = f"{harness.DATASET}/{LEARNERS[0]}"
        harness.wait_for(lambda: _ran(tune) and [r for r in harness.trial_runs(server.url)
                                                 if r.data.tags.get("automil.study") == first],
                         120, "the first trial in MLflow")
        server.kill()
        result = tune.wait(180)
        assert result.returncode == 0, result.stderr
        assert "does not answer" in result.stderr  # said once, when it went away
        (line,) = [line for line in result.stderr.splitlines() if "automil track replay" in line]
        kept = int(line.split("automil: ", 1)[1].split()[0])
        backlog = Path(line.rsplit("automil track replay ", 1)[1])
        assert kept > 0 and list(backlog.glob("*.jsonl")), line
        assert all(name in result.stdout for name in LEARNERS)  # the leaderboard comes out

        again = tmp_path / "again"  # the same records, for a second replay
        again.mkdir()
        for file in backlog.glob("*.jsonl"):
            shutil.copy(file, again / file.name)
        server.start()
        replayed = _replay(tune, backlog)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert not list(backlog.glob("*.jsonl"))  # all logged: the files are gone
        studies = {f"{harness.DATASET}/{name}": tune.trials(name) for name in LEARNERS}
        for trials in studies.values():
            harness.assert_study_complete(trials, 8)
        logged = harness.assert_tracked_once(server.url, studies)
        parents = _study_runs(server.url)
        runs_per_study = Counter(run.data.tags["automil.study"] for run in parents)  # the ensemble's too
        assert set(studies) <= set(runs_per_study) and set(runs_per_study.values()) == {1}, runs_per_study
        client = MlflowClient(tracking_uri=server.url)
        for run in parents:
            assert run.info.status == "FINISHED" and "balanced_accuracy" in run.data.metrics, run.data.tags
            # folds.json, logged before each result, came back with the replay too
            assert "folds.json" in {a.path for a in client.list_artifacts(run.info.run_id)}, run.data.tags
        for file in again.glob("*.jsonl"):  # the same records again, in this process: nothing twice
            again_done = replay(file)
            assert not again_done.left and not again_done.dropped, again_done
        assert harness.assert_tracked_once(server.url, studies) == logged
        assert sorted(run.info.run_id for run in _study_runs(server.url)) == sorted(r.info.run_id for r in parents)
        harness.report("MLflow server killed mid-run, replayed after the run",
                       {"kept": kept, "trials in MLflow": logged, "learner runs": len(parents)})
    finally:
        server.stop()


def _ran(tune: Tune) -> bool:
    """True while the run goes on; a run that ended already fails the test with its messages."""
    assert tune.process.poll() is None, f"automil tune ended before the server was killed:\n{tune.stderr}"
    return True


def _replay(tune: Tune, backlog: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "automil.cli", "track", "replay", str(backlog)], cwd=tune.workdir,
                          env=tune.env, capture_output=True, text=True, timeout=120)


def _study_runs(tracking_uri: str) -> list:
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.get_experiment_by_name(harness.DATASET)
    return list(client.search_runs([experiment.experiment_id], "tags.`automil.kind` = 'study'", max_results=1000))
