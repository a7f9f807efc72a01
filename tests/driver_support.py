"""Shared by the driver's tests: the test-only learner plugin, installed like any third-party plugin, and
helpers that fit workers run (this module imports nothing heavy, so importing it in a worker changes
nothing the tests look at there)."""

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLUGIN_SOURCE = Path(__file__).resolve().parent / "plugins" / "testlearners"
_installed: list[Path] = []


def plugin_site() -> Path:
    """The directory the test plugin is installed in: installed once per test session."""
    if not _installed:
        root = Path(tempfile.mkdtemp(prefix="automil-testlearners-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        _installed.append(install_test_plugin(root))
    return _installed[0]


def install_test_plugin(root: Path) -> Path:
    """pip-install ``tests/plugins/testlearners`` into ``root/site``."""
    return pip_install([PLUGIN_SOURCE], root / "site")


def pip_install(packages, target: Path) -> Path:
    """pip-install plugin packages into ``target`` (kept off the developer's environment) from copies, so
    that the build leaves nothing in the source tree."""
    with tempfile.TemporaryDirectory(prefix="automil-plugin-build-") as scratch:
        copies = [shutil.copytree(package, Path(scratch) / Path(package).name,
                                  ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
                  for package in packages]
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                        "--disable-pip-version-check", "--target", str(target), *map(str, copies)], check=True,
                       capture_output=True)
    return target


def plugin_env(site: Path, records: Path) -> dict:
    """The environment of a process that loads only the test plugin and writes records to ``records``."""
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path,
            "AUTOMIL_LOAD_PLUGINS": "testlearners", "AUTOMIL_TEST_RECORDS": str(records)}


def load_in_process(monkeypatch, records: Path):
    """Make this test process (and the workers it starts) load the test plugin."""
    from automil import plugins

    site = str(plugin_site())
    monkeypatch.syspath_prepend(site)
    for key, value in plugin_env(Path(site), records).items():
        if os.environ.get(key) != value:
            monkeypatch.setenv(key, value)
    plugins.reset()


def wait_for(predicate, timeout: float, what: str, interval: float = 0.05):
    """Poll ``predicate`` until it returns something truthy; fail the test naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@contextlib.contextmanager
def ctrl_c_reaches_children():
    """Processes started inside take Ctrl-C as a terminal's job does. This process may ignore SIGINT (a
    test run started in the background of a non-interactive shell does, and so its pytest-xdist workers),
    and an ignored signal stays ignored in a child, so a Ctrl-C test would send a signal no one sees."""
    previous = signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def imported(_data, module: str) -> bool:
    """In a fit worker: whether ``module`` is imported there."""
    return module in sys.modules
