"""Test set-up: only the built-in plugins load, and the data directory is the shared benchmark files."""

import os
import shutil
from pathlib import Path

import pytest

from automil import plugins

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "datasets"

# Tests never see plugins installed on the developer's machine unless they ask to.
os.environ[plugins.LOAD_PLUGINS_ENV] = ",".join(plugins.BUILTIN_PLUGINS)
os.environ.setdefault("AUTOMIL_DATA_DIR", str(SHARED_DATA))


@pytest.fixture
def fresh_plugins(monkeypatch):
    """Reload plugins for one test (after it changes AUTOMIL_LOAD_PLUGINS or installs a plugin)."""
    plugins.reset()
    yield monkeypatch
    plugins.reset()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = Path(os.environ["AUTOMIL_DATA_DIR"])
    if not path.is_dir():
        pytest.skip(f"benchmark data directory {path} not found (set AUTOMIL_DATA_DIR)")
    return path


@pytest.fixture(scope="session")
def mlflow_store(tmp_path_factory):
    """``mlflow_store(directory)`` -> the URI of an empty MLflow sqlite store at ``directory/mlruns/mlflow.db``.

    MLflow takes seconds to create and migrate the tables of a new store, so the session migrates one and
    every test store starts as its copy. (``test_automil_tune_logs_every_trial_the_result_and_a_model...``
    keeps the path of a store that ``automil tune`` creates itself.)
    """
    from mlflow import MlflowClient

    template = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    MlflowClient(f"sqlite:///{template}").search_experiments()

    def make(directory: Path) -> str:
        database = Path(directory) / "mlruns" / "mlflow.db"
        database.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, database)
        return f"sqlite:///{database}"

    return make


# The longest modules outside the fault tier (``pytest --durations``), started right after the PostgreSQL and
# fault modules: the processes then end on short tests, together.
LONGEST = ("tests/test_tuning.py", "tests/test_predict.py", "tests/test_ui_browser.py", "tests/test_tracking.py",
           "tests/test_multi_objective.py", "tests/test_plugins.py", "tests/plugins/test_forests_accuracy.py")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """How pytest-xdist (``--dist loadgroup``) shares the tests among its processes: the tests of a module
    that share a module fixture run in one process, so it is made once (the others go wherever a process
    is free); the modules that use the PostgreSQL server in the default
    run go to one process, one after another, since one of them stops the server. Those, then the fault
    modules, then the other long ones start first, so the processes end together."""

    def module(item) -> str:
        return item.nodeid.split("::")[0]  # the file, e.g. tests/faults/test_load.py

    def shares_a_fixture(item) -> bool:
        """Whether the test uses a module- or class-scoped fixture (made once per process that needs it)."""
        info = getattr(item, "_fixtureinfo", None)
        return info is not None and any(d.scope in ("module", "class") for defs in info.name2fixturedefs.values()
                                        for d in defs)

    postgres = {module(item) for item in items
                if item.get_closest_marker("postgres") and not item.get_closest_marker("slow")}
    for item in items:
        if module(item) in postgres:
            item.add_marker(pytest.mark.xdist_group("postgres"))
        elif shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(module(item)))

    def start(item) -> int:
        name = module(item)
        return 0 if name in postgres else 1 if "/faults/" in name else 2 if name in LONGEST else 3

    items.sort(key=start)
