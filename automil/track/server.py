"""The MLflow UI on automil's tracking store (``automil ui``): the ``mlflow server`` command, a server
that runs in a session of its own and is stopped with all its workers, the links into its UI and the
leaderboard view the first of them opens.

``mlflow server`` starts a uvicorn process of its own; stopping only the ``mlflow`` process (what a
service manager's SIGTERM to ``automil ui`` used to do) orphans that worker, which keeps serving the
store. The server therefore runs in a new session, and :func:`stop_server` stops its whole process group.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.parse
import urllib.request

from automil.track.store.locations import artifact_root, default_tracking_uri, sqlite_path
from automil.track.store.mlflow_store import Store, retry
from automil.track.store.names import KIND_TAG, STUDY_KIND

__all__ = ["ui_command", "start_server", "stop_server", "wait_until_ready", "dataset_experiments",
           "save_leaderboard_views", "runs_table_url", "trials_table_url", "ServerError"]

# MLflow 3's UI opens an experiment on its GenAI overview unless the page's ``workflowType`` says
# otherwise: the experiment kind tag is ignored while the UI shows its GenAI / Model training switch
# (always, in 3.17). The runs route with this parameter opens the training runs table.
RUNS_QUERY = "workflowType=machine_learning"
# The URL sets the table's filter and sort (``searchFilter``, ``orderByKey``, ``orderByAsc``) but not its
# columns; a view saved in the experiment (MLflow 3.17's *Views*, an experiment tag
# ``mlflow.sharedViewState.<key>``) holds both, and ``viewStateShareKey=<key>`` opens it, provided the URL
# carries no filter or sort of its own (the UI then ignores the view).
VIEW_TAG_PREFIX = "mlflow.sharedViewState."
LEADERBOARD_VIEW = "automil-leaderboard"
LEADERBOARD_NAME = "automil: learners by balanced accuracy"
# The headline metrics, first after the run's name and creation time, each as wide as its name.
HEADLINE_WIDTHS = {"balanced_accuracy": 160, "balanced_accuracy_std": 180, "accuracy": 140, "accuracy_std": 140}
# The UI nests trials under their learner only in creation order: any other sort lists every run flat, so
# the leaderboard keeps the learners' runs alone and the trials have this table of their own.
TRIALS_QUERY = "searchFilter=&orderByKey=attributes.start_time&orderByAsc=false"
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


def leaderboard_view() -> dict:
    """The runs table as the leaderboard: the learners' runs (not their trials) best first by headline
    balanced accuracy, the headline metrics in the first columns, then each run's dataset and model."""
    headline = [f"metrics.`{name}`" for name in HEADLINE_WIDTHS]
    return {"searchFilter": f"tags.`{KIND_TAG}` = '{STUDY_KIND}'", "orderByKey": headline[0], "orderByAsc": False,
            "selectedColumns": [*headline, "attributes.`Dataset`", "attributes.`Models`"],
            "columnOrder": ["attributes.`Run Name`", "runDateAndNestInfo", *headline, "attributes.`Dataset`",
                            "duration", "attributes.`Models`"],
            "columnWidths": dict(zip(headline, HEADLINE_WIDTHS.values()))}


def save_leaderboard_views(base_url: str, experiment_ids) -> None:
    """Save :func:`leaderboard_view` in each experiment, as the UI's *Views* menu saves a view (the same
    key every time, so that saving again replaces it)."""
    store = Store(base_url)
    now = int(time.time() * 1000)
    saved = json.dumps({"name": LEADERBOARD_NAME, "createdAt": now, "updatedAt": now,
                        "state": json.dumps(leaderboard_view())})
    for experiment_id in experiment_ids:
        retry(store.client.set_experiment_tag, experiment_id, VIEW_TAG_PREFIX + LEADERBOARD_VIEW, saved)


def runs_table_url(base_url: str, experiment_id: str) -> str:
    """The address that opens ``experiment_id``'s runs table in MLflow's UI as the leaderboard saved by
    :func:`save_leaderboard_views`."""
    view = urllib.parse.urlencode({"viewStateShareKey": LEADERBOARD_VIEW})
    return f"{base_url}/#/experiments/{experiment_id}/runs?{RUNS_QUERY}&{view}"


def trials_table_url(base_url: str, experiment_id: str) -> str:
    """The address that opens ``experiment_id``'s runs table in creation order, each learner's trials
    nested under its run."""
    return f"{base_url}/#/experiments/{experiment_id}/runs?{RUNS_QUERY}&{TRIALS_QUERY}"


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
