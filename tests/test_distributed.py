"""The set-up of docs/distributed.md, command for command: PostgreSQL holds the studies and MLflow's runs, an
``mlflow server`` on it is the tracking store, and the same ``automil tune`` command runs on every "machine"
(here: two processes with nothing in common but the two URLs). Every trial is recorded once in the study
store and once in MLflow, and both machines print the same leaderboard figures.
"""

import json

import pytest
from faults import harness
from faults.harness import MlflowServer, Tune

pytestmark = [*harness.needs_postgres, pytest.mark.timeout(420)]

N_TRIALS = 24


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return harness.install_plugins(tmp_path_factory.mktemp("plugins"))


def test_the_same_tune_command_on_two_machines_shares_one_study_and_one_tracking_server(tmp_path, site):
    url = harness.postgres_url()
    with harness.postgres_database(url) as studies, harness.postgres_database(url) as mlflow_db:
        # docs/distributed.md, step 2: the tracking server on the database (artifacts proxied by it).
        server = MlflowServer(mlflow_db, tmp_path / "tracking").start()
        try:
            # Step 3: the same command on every machine.
            machines = [Tune(tmp_path / f"machine-{i}", site, studies, n_trials=N_TRIALS, tracking_uri=server.url,
                             extra=("--json", "leaderboard.json")) for i in range(2)]
            for machine in machines:
                machine.start()
            password = harness.postgres_password(studies)
            for machine in machines:
                result = machine.wait(360)
                assert result.returncode == 0, result.stderr
                shown = result.stdout + result.stderr
                assert studies not in shown and f":{password}@" not in shown, "the password is never shown"
            trials = machines[0].trials("centroid")
            harness.assert_study_complete(trials, N_TRIALS, workers=2)
            workers = {t.user_attrs["worker"] for t in trials}
            assert len(workers) == 2, f"both machines ran trials: {workers}"
            logged = harness.assert_tracked_once(server.url, {f"{harness.DATASET}/centroid": trials})
            boards = [json.loads((m.workdir / "leaderboard.json").read_text()) for m in machines]
            assert boards[0][0]["best_trial"] == boards[1][0]["best_trial"]
            harness.report("two machines on PostgreSQL + MLflow server", {**harness.figures(trials),
                                                                          "in MLflow": logged})
        finally:
            server.stop()
