"""The MLflow UI on automil's tracking store (``automil ui``): the ``mlflow server`` command, a server
that runs in a session of its own and is stopped with all its workers, and the links into its UI.

``mlflow server`` starts a uvicorn process of its own; stopping only the ``mlflow`` process (what a
service manager's SIGTERM to ``automil ui`` used to do) orphans that worker, which keeps serving the
store. The server therefore runs in a new session, and :func:`stop_server` stops its whole process group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request

from automil.track.locations import artifact_root, default_tracking_uri, sqlite_path
from automil.track.store import Store

__all__ = ["ui_command", "start_server", "stop_server", "wait_until_ready", "dataset_experiments",
           "runs_table_url", "ServerError"]

# MLflow 3's UI opens an experiment on its GenAI overview unless the page's ``workflowType`` says
# otherwise: the experiment kind tag is ignored while the UI shows its GenAI / Model training switch
# (always, in 3.17). The runs route with this parameter opens the training runs table.
RUNS_QUERY = "workflowType=machine_learning"
_GRACE_SECONDS = 10


class ServerError(RuntimeError):
    """The MLflow server exited before it answered."""


def ui_command(tracking_uri: str | None = None, host: str = "127.0.0.1", port: int = 5000):
    """``(command, env)`` of the ``mlflow server`` serving the MLflow UI on the store ``tracking_uri``
    (default: as :class:`automil.track.Tracker`) at ``http://host:port``; :func:`start_server` runs it.

    Artifacts that the UI uploads go next to a sqlite database, like automil's own. MLflow's job
    runner (a pool of background workers for GenAI evaluation jobs) is switched off: the UI does not
    need it to show runs, and on a small machine its processes compete with tuning.
    """
    import sys

    uri = tracking_uri or default_tracking_uri()
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri, "--host", host,
               "--port", str(port), "--workers", "1"]
    root = artifact_root(uri)
    if root is not None:
        sqlite_path(uri).parent.mkdir(parents=True, exist_ok=True)
        command += ["--artifacts-destination", root]
    return command, {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


def runs_table_url(base_url: str, experiment_id: str) -> str:
    """The address that opens ``experiment_id``'s runs table (one row per learner) in MLflow's UI."""
    return f"{base_url}/#/experiments/{experiment_id}/runs?{RUNS_QUERY}"


def start_server(command: list[str], env: dict) -> subprocess.Popen:
    """``command`` in a new session, so that its process group holds the server and all its workers."""
    return subprocess.Popen(command, env=env, start_new_session=True)


def stop_server(server: subprocess.Popen) -> None:
    """SIGTERM to the server's process group, SIGKILL to what is left after a grace period."""
    for sig in (signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + _GRACE_SECONDS
        while time.monotonic() < deadline and _group_alive(server):
            time.sleep(0.1)
        if not _group_alive(server):
            break
    server.wait()


def _group_alive(server: subprocess.Popen) -> bool:
    server.poll()  # reap the leader, so that a finished leader does not count as alive
    try:
        os.killpg(server.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_until_ready(server: subprocess.Popen, base_url: str, stopped=()) -> bool:
    """``True`` once ``base_url/health`` answers, ``False`` as soon as ``stopped`` is not empty;
    :class:`ServerError` if the server exits first."""
    while not stopped:
        if server.poll() is not None:
            raise ServerError(f"mlflow server exited with code {server.returncode} before it answered at "
                              f"{base_url} (is the port in use? its messages are above)")
        try:
            with urllib.request.urlopen(f"{base_url}/health", timeout=2) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.25)
    return False


def dataset_experiments(base_url: str) -> list[tuple[str, str]]:
    """``(dataset, experiment id)`` of every automil experiment the server holds, by dataset name."""
    return sorted(Store(base_url).dataset_experiments())
