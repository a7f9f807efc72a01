"""Load: six ``automil tune`` processes, four on PostgreSQL and two on sqlite, finish 100 short trials between
them; every trial is in its storage exactly once and every finished trial in MLflow exactly once."""

import pytest

from faults import harness
from faults.harness import Tune

pytestmark = [*harness.needs_postgres, pytest.mark.timeout(420)]

POSTGRES_WORKERS, POSTGRES_TRIALS = 4, 60
SQLITE_WORKERS, SQLITE_TRIALS = 2, 40


def test_four_workers_on_postgresql_and_two_on_sqlite_record_100_trials_exactly_once(tmp_path, site, postgres,
                                                                                       mlflow_server, mlflow_store):
    # The PostgreSQL workers play four machines sharing one study store and one MLflow server; the sqlite
    # workers play one machine with its own study file and MLflow store.
    local_tracking = mlflow_store(tmp_path)
    groups = {
        "postgresql": ([Tune(tmp_path / f"pg{i}", site, postgres, n_trials=POSTGRES_TRIALS,
                             tracking_uri=mlflow_server.url) for i in range(POSTGRES_WORKERS)], POSTGRES_TRIALS),
        "sqlite": ([Tune(tmp_path / f"sq{i}", site, f"sqlite:///{tmp_path / 'studies.db'}", n_trials=SQLITE_TRIALS,
                         tracking_uri=local_tracking) for i in range(SQLITE_WORKERS)], SQLITE_TRIALS),
    }
    for workers, _ in groups.values():
        for tune in workers:
            tune.start()
    for workers, _ in groups.values():
        for tune in workers:
            result = tune.wait(400)
            assert result.returncode == 0, result.stderr
            assert "warning: MLflow" not in result.stderr, "every worker logs (none lost a race for the store)"
    for name, (workers, n_trials) in groups.items():
        trials = workers[0].trials("centroid")
        harness.assert_study_complete(trials, n_trials, workers=len(workers))
        # the learner's defaults (first_trial) ran first, and at most once per worker that found the study empty
        defaults = sorted(t.number for t in trials if t.params == {"shrink": 0.0})
        assert defaults[:1] == [0] and len(defaults) <= len(workers), defaults
        logged = harness.assert_tracked_once(workers[0].tracking_uri, {f"{harness.DATASET}/centroid": trials})
        harness.report(f"load: {len(workers)} workers on {name}", {**harness.figures(trials), "in MLflow": logged})
