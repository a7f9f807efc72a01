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


@pytest.fixture
def postgres():
    """The URL of a fresh database on the test PostgreSQL server (dropped after the test)."""
    url = harness.postgres_url()
    if url is None:
        pytest.skip(f"no PostgreSQL server: set {harness.POSTGRES_URL_ENV} (e.g. "
                    "`export AUTOMIL_TEST_POSTGRES_URL=$(bash .ci/postgres.sh start | tail -n 1)`)")
    with harness.postgres_database(url) as database:
        yield database
