"""The MLflow UI on automil's tracking store (``automil ui``)."""

from __future__ import annotations

import os

from automil.track.store import artifact_root, default_tracking_uri, sqlite_path

__all__ = ["start_ui"]


def start_ui(tracking_uri: str | None = None, host: str = "127.0.0.1", port: int = 5000):
    """Start ``mlflow server`` on the store ``tracking_uri`` (default: as :class:`Tracker`), serving the
    MLflow UI at ``http://host:port``; returns the ``subprocess.Popen``.

    Artifacts that the UI uploads go next to a sqlite database, like automil's own. MLflow's job
    runner (a pool of background workers for GenAI evaluation jobs) is switched off: the UI does not
    need it to show runs, and on a small machine its processes compete with tuning.
    """
    import subprocess
    import sys

    uri = tracking_uri or default_tracking_uri()
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri, "--host", host,
               "--port", str(port), "--workers", "1"]
    root = artifact_root(uri)
    if root is not None:
        sqlite_path(uri).parent.mkdir(parents=True, exist_ok=True)
        command += ["--artifacts-destination", root]
    return subprocess.Popen(command, env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})
