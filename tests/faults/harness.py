"""Real processes and real stores for the fault, load and distributed tests.

Everything here starts what a user would start: ``automil tune`` as a command (``python -m automil.cli``),
PostgreSQL through ``.ci/postgres.sh``, ``mlflow server`` on 127.0.0.1. Learners come from two test plugins
installed like third-party packages: the driver's ``automil_testlearners`` (well-behaved learners and the
``test-bags`` dataset) and ``automil_faultlearners`` (misbehaving ones).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import urllib.request
import uuid
from collections import Counter
from pathlib import Path

import pytest
from driver_support import ctrl_c_reaches_children, pip_install, wait_for  # noqa: F401 (wait_for: the tests' helper)

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "tests" / "plugins"
POSTGRES_SCRIPT = REPO / ".ci" / "postgres.sh"
POSTGRES_URL_ENV = "AUTOMIL_TEST_POSTGRES_URL"
DATASET = "test-bags"
# 2-fold CV so that a trial takes a fraction of a second; the tuned protocol keeps one study per learner.
# One tuning process per command (the default is one per core) so that fits happen in a known order; a
# test that wants more passes --jobs again (the last one counts).
FAST = ("--folds", "2", "--repeats", "1", "--protocol", "tuned", "--timeout", "none", "--jobs", "1")


def install_plugins(target: Path) -> Path:
    """pip-install both test plugins into ``target``."""
    return pip_install([PLUGINS / "testlearners", PLUGINS / "faultlearners"], target)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _process_state(pid: int) -> str | None:
    """The state letter of ``pid`` in ``/proc`` (``None``: no such process)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (a zombie counts as gone: it holds no memory)."""
    return _process_state(pid) in (None, "Z")


def process_stopped(pid: int) -> bool:
    """True when ``pid`` has stopped itself (SIGSTOP: state T), as the ask hook of the fault tests does."""
    return _process_state(pid) == "T"


# ---- automil tune as a process -----------------------------------------------------------------------
class Tune:
    """One ``automil tune`` command line, run as many times as a test needs (rerun = same command)."""

    def __init__(self, workdir: Path, site: Path, storage: str, learners=("centroid",), n_trials: int = 6,
                 tracking_uri: str | None = None, extra=(), env: dict | None = None):
        self.workdir = Path(workdir)
        self.records = self.workdir / "records"
        self.storage = storage
        self.tracking_uri = tracking_uri
        self.args = ["tune", "--dataset", DATASET, *[a for name in learners for a in ("--learner", name)],
                     "--n-trials", str(n_trials), "--storage", storage, *FAST, *extra]
        self.args += ["--tracking-uri", tracking_uri] if tracking_uri else ["--no-track"]
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site),
                                                                               os.environ.get("PYTHONPATH")])),
                    "AUTOMIL_LOAD_PLUGINS": "testlearners,faultlearners",
                    "AUTOMIL_TEST_RECORDS": str(self.records), "PYTHONUNBUFFERED": "1", **(env or {})}
        self.runs = 0

    def start(self) -> subprocess.Popen:
        """Start the command in its own process group (as a shell job would be); output goes to files."""
        self.runs += 1
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.out_path = self.workdir / f"run{self.runs}.out"
        self.err_path = self.workdir / f"run{self.runs}.err"
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err, ctrl_c_reaches_children():
            self.process = subprocess.Popen([sys.executable, "-m", "automil.cli", *self.args], cwd=self.workdir,
                                            env=self.env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        return self.process

    def wait(self, timeout: float = 120) -> subprocess.CompletedProcess:
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            raise AssertionError(f"automil tune did not end within {timeout} s; stderr:\n{self.stderr}") from None
        return subprocess.CompletedProcess(self.args, code, self.stdout, self.stderr)

    def run(self, timeout: float = 120) -> subprocess.CompletedProcess:
        self.start()
        return self.wait(timeout)

    @property
    def stdout(self) -> str:
        return self.out_path.read_text()

    @property
    def stderr(self) -> str:
        return self.err_path.read_text()

    def fit_pids(self, kind: str = "fit") -> list[int]:
        """Pids of the worker processes that started a fit of a fault learner, oldest first."""
        if not self.records.is_dir():
            return []
        files = sorted(self.records.glob(f"{kind}-*.pid"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
        return [int(p.read_text()) for p in files]

    def wait_for_fit(self, count: int = 1, kind: str = "fit", timeout: float = 60) -> int:
        """Block until the ``count``-th fit has started; returns the pid of the worker running it."""
        pids = wait_for(lambda: len(self.fit_pids(kind)) >= count and self.fit_pids(kind),
                        timeout, f"fit number {count} to start")
        return pids[count - 1]

    def trials(self, learner: str = "centroid"):
        return study_trials(self.storage, f"{DATASET}/{learner}")

    def rerun_completes(self, learner: str, n_trials: int, scenario: str, workers: int = 1) -> list:
        """After a fault: note the finished trials, rerun the same command, and check that it exits 0 and
        leaves the study complete with every noted trial unchanged; report the scenario's figures."""
        before = snapshot(self.trials(learner))
        rerun = self.run()
        assert rerun.returncode == 0, rerun.stderr
        trials = self.trials(learner)
        assert_study_complete(trials, n_trials, before, workers=workers)
        report(scenario, figures(trials, before))
        return trials


# ---- what the stores hold ------------------------------------------------------------------------------
def study_trials(storage: str, study: str) -> list:
    """Every trial of ``study`` in ``storage`` (an automil ``--storage`` string), read afresh."""
    import optuna

    from automil.tune.backend.optuna_storage import open_storage

    store = open_storage(storage)
    try:
        return optuna.load_study(study_name=study, storage=store).get_trials(deepcopy=False)
    except KeyError:
        return []
    finally:
        engine = getattr(store, "engine", None)
        if engine is not None:
            engine.dispose()


def counted(trials) -> list:
    """The finished trials that count toward ``--n-trials`` (an interrupted or orphaned one does not, nor
    one whose process died and that Optuna's heartbeat retried)."""
    return [t for t in trials if t.state.is_finished() and t.number not in retried(trials)
            and not (t.user_attrs.get("stale") or t.user_attrs.get("interrupted"))]


def retried(trials) -> set[int]:
    """The numbers of the trials an RDB storage failed by their heartbeat and queued again."""
    return {number for t in trials for number in t.system_attrs.get("retry_history", ())}


def snapshot(trials) -> dict:
    """Finished trials by number, with what must never change once recorded."""
    return {t.number: (t.state.name, t.value, dict(t.params), t.user_attrs.get("error"))
            for t in trials if t.state.is_finished()}


def assert_study_complete(trials, n_trials: int, before: dict | None = None, workers: int = 1):
    """The invariants every scenario ends with (after the rerun).

    - no trial is left RUNNING or WAITING, trial numbers are 0..n-1 once each (nothing recorded twice);
    - at least ``n_trials`` trials count toward the budget, and at most ``workers - 1`` more (concurrent
      workers may each start a last trial);
    - every trial finished before the fault is still there, unchanged (nothing lost).
    """
    numbers = [t.number for t in trials]
    assert sorted(numbers) == list(range(len(trials))), f"trial numbers not unique: {numbers}"
    unfinished = [t.number for t in trials if not t.state.is_finished()]
    assert not unfinished, f"trials left unfinished: {unfinished}"
    done = len(counted(trials))
    assert n_trials <= done <= n_trials + workers - 1, f"{done} counted trials for --n-trials {n_trials}"
    if before:
        after = snapshot(trials)
        lost = {n: v for n, v in before.items() if after.get(n) != v}
        assert not lost, f"trials finished before the fault changed or disappeared: {lost}"


def figures(trials, before: dict | None = None) -> dict:
    """The numbers ``docs/reliability.md`` reports for a scenario."""
    states = Counter(t.state.name for t in trials)
    return {"trials": len(trials), "counted": len(counted(trials)), **states,
            "kept": len(before or {}), "lost": sum(1 for n, v in (before or {}).items()
                                                   if snapshot(trials).get(n) != v),
            "duplicated": len(trials) - len({t.number for t in trials})}


def report(name: str, numbers: dict):
    """Print a scenario's figures (``pytest -s`` shows them; docs/reliability.md quotes them)."""
    print(f"\n[reliability] {name}: " + ", ".join(f"{k}={v}" for k, v in numbers.items()))


# ---- PostgreSQL ----------------------------------------------------------------------------------------
def postgres_url() -> str | None:
    return os.environ.get(POSTGRES_URL_ENV) or None


NO_POSTGRES = (f"no PostgreSQL server: set {POSTGRES_URL_ENV} (e.g. `export {POSTGRES_URL_ENV}="
               "$(bash .ci/postgres.sh start | tail -n 1)`)")
needs_postgres = [pytest.mark.postgres, pytest.mark.skipif(not os.environ.get(POSTGRES_URL_ENV), reason=NO_POSTGRES)]


@contextlib.contextmanager
def postgres_database(url: str):
    """A fresh, empty database on the server of ``url`` for one test; dropped afterwards."""
    import sqlalchemy as sa

    name = f"automil_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield url.rsplit("/", 1)[0] + "/" + name
    finally:
        with contextlib.suppress(Exception), admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def postgres_password(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).password


def postgres_script(command: str) -> str:
    """Run ``.ci/postgres.sh start|stop`` (the server the script manages)."""
    return subprocess.run(["bash", str(POSTGRES_SCRIPT), command], check=True, capture_output=True, text=True,
                          timeout=120).stdout.strip()


def script_manages(url: str) -> bool:
    """Whether ``url`` points at the server ``.ci/postgres.sh`` controls (only that one may be stopped)."""
    try:
        return postgres_script("url").rsplit("/", 1)[0] == url.rsplit("/", 1)[0]
    except subprocess.CalledProcessError:
        return False


# ---- MLflow ----------------------------------------------------------------------------------------------
class MlflowServer:
    """``mlflow server`` on 127.0.0.1 with a database backend; stop and start it at will (same port).
    ``app`` and ``env`` start another server app (``--app-name basic-auth`` with its configuration)."""

    def __init__(self, backend_uri: str, workdir: Path, app: str | None = None, env: dict | None = None):
        self.backend_uri = backend_uri
        self.app, self.env = app, env or {}
        self.workdir = Path(workdir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = None
        self.starts = 0

    def start(self, timeout: float = 180):
        self.starts += 1
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = open(self.workdir / f"mlflow-server-{self.starts}.log", "w")
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", **self.env}
        app = ["--app-name", self.app] if self.app else []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", self.backend_uri,
             "--artifacts-destination", (self.workdir / "artifacts").as_uri(), "--host", "127.0.0.1",
             "--port", str(self.port), "--workers", "1", *app],
            cwd=self.workdir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        wait_for(self.healthy, timeout, f"mlflow server on port {self.port}", interval=0.2)
        return self

    @property
    def log(self) -> str:
        """What the server wrote since it last started (uvicorn logs one line per request)."""
        return (self.workdir / f"mlflow-server-{self.starts}.log").read_text()

    def healthy(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"mlflow server exited with {self.process.returncode}:\n"
                                 + (self.workdir / f"mlflow-server-{self.starts}.log").read_text()[-3000:])
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=1) as response:
                return response.status == 200
        except OSError:
            return False

    def stop(self):
        """Stop the server and every process it started (its process group)."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


    def kill(self):
        """SIGKILL to the server and every process it started: it goes away without a word."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def trial_runs(tracking_uri: str, dataset: str = DATASET) -> list:
    """Every nested trial run (not deleted) of ``dataset``'s experiment in the store."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.get_experiment_by_name(dataset)
    if experiment is None:
        return []
    runs, token = [], None
    while True:
        page = client.search_runs([experiment.experiment_id], "tags.`automil.kind` = 'trial'",
                                  max_results=1000, page_token=token)
        runs += list(page)
        token = page.token
        if not token:
            return runs


def assert_tracked_once(tracking_uri: str, studies: dict):
    """Every finished trial of every study has exactly one nested run in MLflow, and the studies have no
    other trial runs. ``studies`` maps a study name to its trials (from the Optuna storage)."""
    runs = [r for r in trial_runs(tracking_uri) if r.data.tags.get("automil.study") in studies]
    logged = Counter((r.data.tags.get("automil.study"), int(r.data.tags["automil.trial"])) for r in runs)
    twice = {key: n for key, n in logged.items() if n > 1}
    assert not twice, f"trials logged more than once: {sorted(twice.items())[:10]}"
    finished = {(study, t.number) for study, trials in studies.items() for t in trials if t.state.is_finished()}
    missing = finished - set(logged)
    assert not missing, f"finished trials missing from MLflow: {sorted(missing)[:10]}"
    extra = set(logged) - finished
    assert not extra, f"MLflow runs for trials the storage does not hold as finished: {sorted(extra)[:10]}"
    return len(runs)
