"""``automil ui`` as a service manager or a script meets it: real ``automil ui`` and ``mlflow server``
processes on a real (empty) sqlite store; no browser needed."""

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stat(pid: int) -> tuple[int, int] | None:
    """``(parent pid, session id)`` of a live process, from /proc; ``None`` once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (command) "
    return (None if fields[0] == "Z" else (int(fields[1]), int(fields[3])))


def _processes() -> dict[int, tuple[int, int]]:
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                found[int(entry.name)] = stat
    return found


def _port_is_free(port: int) -> bool:
    """Whether a new server can listen on ``port`` (as uvicorn does: connections of the old one that are
    closing, in TIME_WAIT, do not count)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
            probe.listen()
        except OSError:
            return False
        return True


@pytest.fixture(scope="module")
def store(tmp_path_factory, mlflow_store) -> str:
    """One empty tracking store for the module."""
    return mlflow_store(tmp_path_factory.mktemp("ui"))


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
@pytest.mark.parametrize("stop", [signal.SIGTERM, pytest.param(signal.SIGHUP, marks=pytest.mark.slow)],
                         ids=["SIGTERM", "SIGHUP"])  # one handler serves both: SIGHUP on demand only
def test_ui_announces_the_url_once_the_server_answers_and_a_signal_stops_every_process(store, stop):
    port = _free_port()
    ui = subprocess.Popen([sys.executable, "-m", "automil.cli", "ui", "--port", str(port), "--tracking-uri", store],
                          stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        lines = []
        for line in ui.stdout:  # mlflow's own lines come between automil's
            lines.append(line)
            if "MLflow UI at" in line:
                break
        assert lines and lines[0].startswith("automil: starting the MLflow UI"), lines
        assert f"http://127.0.0.1:{port}" in lines[-1], lines
        # announced only once it answers: the first request after the line succeeds
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as response:
            assert response.status == 200
        servers = [pid for pid, (parent, _) in _processes().items() if parent == ui.pid]
        assert len(servers) == 1
        session = _processes()[servers[0]][1]
        workers = [pid for pid, (_, sid) in _processes().items() if sid == session]
        assert len(workers) >= 2  # mlflow server and its uvicorn worker
        ui.send_signal(stop)  # to automil ui alone, as a service manager does; not to its group
        assert ui.wait(timeout=120) == 0
    finally:
        if ui.poll() is None:
            os.killpg(ui.pid, signal.SIGKILL)
            ui.wait()
        ui.stdout.close()
    left = [pid for pid, (_, sid) in _processes().items() if sid == session]
    assert left == [], f"processes of the MLflow server left running: {left}"
    assert _port_is_free(port)
