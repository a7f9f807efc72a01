"""Fixtures of the fault suite: the test plugins installed once, a fresh store per test."""

import pytest

from faults import harness


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """A directory holding the installed test plugins (put on PYTHONPATH of every automil process)."""
    return harness.install_plugins(tmp_path_factory.mktemp("plugins"))


@pytest.fixture
def journal(tmp_path) -> str:
    return f"journal:{tmp_path / 'studies' / 'automil.journal'}"


@pytest.fixture(params=["journal", "sqlite", pytest.param("postgres", marks=harness.needs_postgres)])
def any_storage(request, tmp_path) -> str:
    """Each study storage in turn: the journal file, sqlite, PostgreSQL (marked ``postgres``)."""
    if request.param == "journal":
        return f"journal:{tmp_path / 'studies' / 'automil.journal'}"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'studies.db'}"
    return request.getfixturevalue("postgres")


@pytest.fixture
def postgres():
    """The URL of a fresh database on the test PostgreSQL server (dropped after the test)."""
    url = harness.postgres_url()
    if url is None:
        pytest.skip(harness.NO_POSTGRES)
    with harness.postgres_database(url) as database:
        yield database


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory, mlflow_store):
    """One ``mlflow server`` (sqlite backend) for the session; a test may stop and start it."""
    workdir = tmp_path_factory.mktemp("mlflow-server")
    server = harness.MlflowServer(mlflow_store(workdir), workdir)
    try:
        yield server.start()
    finally:
        server.stop()
