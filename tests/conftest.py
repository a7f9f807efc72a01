"""Test set-up: only the built-in plugins load, and the data directory is the shared benchmark files."""

import os
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
