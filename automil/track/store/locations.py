"""Where MLflow keeps automil's runs: the default tracking URI, the sqlite file behind a URI, where
artifacts go, and a quick check that a database server answers."""

from __future__ import annotations

import os
from pathlib import Path

from automil.uris import shown_storage

__all__ = ["default_tracking_uri", "artifact_root", "sqlite_path", "reach_database"]

DEFAULT_STORE_DIR = "mlruns"
DEFAULT_DB_NAME = "mlflow.db"


def default_tracking_uri() -> str:
    """``$MLFLOW_TRACKING_URI``, else a sqlite store ``mlruns/mlflow.db`` under the working directory."""
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if uri:
        return uri
    return "sqlite:///" + str(Path.cwd() / DEFAULT_STORE_DIR / DEFAULT_DB_NAME)


def artifact_root(tracking_uri: str) -> str | None:
    """Where artifacts of experiments created by automil go: next to a sqlite database file (so
    ``sqlite:///x/mlruns/mlflow.db`` keeps them under ``x/mlruns/``); ``None`` (the server's or
    MLflow's default) for any other store."""
    path = sqlite_path(tracking_uri)
    return None if path is None else path.parent.resolve().as_uri()


def sqlite_path(tracking_uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI; ``None`` for an in-memory database or another store."""
    prefix = "sqlite:///"
    if not tracking_uri.startswith(prefix) or tracking_uri.startswith(prefix + ":memory:"):
        return None
    return Path(tracking_uri[len(prefix):].split("?", 1)[0])


def reach_database(tracking_uri: str):
    """Fail at once, naming the store, when a database server behind ``tracking_uri`` does not answer.
    MLflow would retry for about 100 s, logging a warning per attempt, and then give the bare driver
    error."""
    if tracking_uri.split("://", 1)[0].split("+", 1)[0] not in ("postgresql", "mysql", "mssql"):
        return
    from sqlalchemy import create_engine
    from sqlalchemy.exc import DBAPIError

    engine = create_engine(tracking_uri)
    try:
        with engine.connect():
            pass
    except DBAPIError as error:
        reason = " ".join(str(error.orig).split())
        raise ValueError(f"cannot reach the tracking store {shown_storage(tracking_uri)}: {reason}") from None
    finally:
        engine.dispose()
