"""A tracking server shared by a team, with a login: MLflow's ``mlflow server --app-name basic-auth``.

``automil tune`` and ``automil ui`` log in with ``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD``
(MLflow's client sends them as HTTP basic auth); a client without them is refused, and a wrong password
stops the command with one line naming the server, after one refused request, with no password shown.
"""

import os
import subprocess
import sys

import pytest

from faults import harness

pytest.importorskip("flask_wtf", reason="the basic-auth app needs mlflow[auth] (Flask-WTF)")

ADMIN, ADMIN_PASSWORD = "admin", "admin-Passw0rd-7f3c"
USER, PASSWORD = "tuner", "tuner-Passw0rd-91ab"
WRONG = "not-the-Passw0rd-d42e"


@pytest.fixture(scope="module")
def server(tmp_path_factory, mlflow_store):
    """A basic-auth server with its admin and one user, ``tuner``, who may create experiments."""
    from mlflow.server import get_app_client

    workdir = tmp_path_factory.mktemp("auth-server")
    config = workdir / "basic_auth.ini"
    config.write_text("[mlflow]\ndefault_permission = READ\n"
                      f"database_uri = sqlite:///{workdir / 'basic_auth.db'}\n"
                      f"admin_username = {ADMIN}\nadmin_password = {ADMIN_PASSWORD}\n"
                      "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
                      "auth_cache_ttl_seconds = 600\n")  # PBKDF2 once per login, not per request
    env = {"MLFLOW_AUTH_CONFIG_PATH": str(config), "MLFLOW_FLASK_SERVER_SECRET_KEY": "automil-test-secret"}
    server = harness.MlflowServer(mlflow_store(workdir), workdir, app="basic-auth", env=env)
    try:
        server.start()
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MLFLOW_TRACKING_USERNAME", ADMIN)
            patch.setenv("MLFLOW_TRACKING_PASSWORD", ADMIN_PASSWORD)
            get_app_client("basic-auth", tracking_uri=server.url).create_user(USER, PASSWORD)
        yield server
    finally:
        server.stop()


def login(username: str | None, password: str | None) -> dict:
    """The login variables of a client that logs in as ``username`` (None: without a login)."""
    return {} if username is None else {"MLFLOW_TRACKING_USERNAME": username, "MLFLOW_TRACKING_PASSWORD": password}


def ui(server, login_env: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")}
    return subprocess.run([sys.executable, "-m", "automil.cli", "ui", "--tracking-uri", server.url],
                          env={**env, **login_env}, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def refused_requests(server) -> int:
    return sum(" 401 " in line for line in server.log.splitlines())


def test_tune_and_ui_log_in_with_the_environment_s_credentials(tmp_path, site, journal, server, monkeypatch):
    from mlflow import MlflowClient

    tune = harness.Tune(tmp_path, site, journal, n_trials=3, tracking_uri=server.url, env=login(USER, PASSWORD))
    done = tune.run(timeout=300)
    assert done.returncode == 0, done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", USER)
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORD)
    runs = harness.trial_runs(server.url)
    assert sorted(int(run.data.tags["automil.trial"]) for run in runs) == [0, 1, 2]
    experiment = MlflowClient(server.url).get_experiment_by_name(harness.DATASET)
    shown = ui(server, login(USER, PASSWORD))
    assert shown.returncode == 0, shown.stderr
    assert f"{harness.DATASET}: {server.url}/#/experiments/{experiment.experiment_id}/runs?" in shown.stdout
    assert PASSWORD not in shown.stdout + shown.stderr


def test_a_client_without_a_login_is_refused(server):
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    with pytest.MonkeyPatch.context() as patch:
        for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
            patch.delenv(name, raising=False)
        with pytest.raises(MlflowException) as refused:
            MlflowClient(server.url).search_experiments()
    assert refused.value.get_http_status_code() == 401
    shown = ui(server, login(None, None))
    assert shown.returncode == 1
    assert shown.stderr.splitlines() == [f"automil: error: the MLflow server {server.url} asks for a login "
                                         "(HTTP 401): set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD "
                                         "to an account of the server"]


def test_a_wrong_password_stops_tune_and_ui_with_one_line_after_one_refused_request(tmp_path, site, journal,
                                                                                   server):
    expected = [f"automil: error: the MLflow server {server.url} refused the login of user {USER!r} (HTTP 401): "
                "check MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD"]
    before = refused_requests(server)
    tune = harness.Tune(tmp_path, site, journal, n_trials=3, tracking_uri=server.url, env=login(USER, WRONG))
    done = tune.run(timeout=300)
    assert done.returncode == 1
    assert done.stderr.splitlines() == expected  # one line: no traceback, no retry warnings
    assert WRONG not in done.stdout + done.stderr
    assert refused_requests(server) == before + 1, "the refused login was tried again"
    assert not [t for t in tune.trials() if t.state.is_finished()], "it stopped before tuning untracked"
    shown = ui(server, login(USER, WRONG))
    assert shown.returncode == 1 and shown.stderr.splitlines() == expected
    assert WRONG not in shown.stdout + shown.stderr
