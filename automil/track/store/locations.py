"""Where MLflow keeps automil's runs: the default tracking URI, the sqlite file behind a URI, where
artifacts go, a quick check that a database server answers, and what a tracking server's refused login means."""

from __future__ import annotations

import os
from pathlib import Path

from automil.uris import shown_storage

__all__ = ["default_tracking_uri", "artifact_root", "sqlite_path", "reach_database", "is_tracking_server",
           "refused_login"]

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


# MLflow's client sends these as HTTP basic auth to a tracking server (``mlflow server --app-name basic-auth``).
USERNAME_ENV, PASSWORD_ENV = "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"


def is_tracking_server(tracking_uri: str) -> bool:
    """Whether ``tracking_uri`` names an MLflow tracking server (which serves its own UI) rather than a store."""
    return tracking_uri.startswith(("http://", "https://"))


def refused_login(error: BaseException, tracking_uri: str) -> str | None:
    """One line saying that the tracking server refused the login, when ``error`` (or its cause) is its
    HTTP 401 or 403; ``None`` for any other error. It names the server and the user, never the password."""
    from mlflow.exceptions import MlflowException

    while error is not None and not isinstance(error, MlflowException):
        error = error.__cause__ or error.__context__
    status = None if error is None else error.get_http_status_code()
    if status not in (401, 403):
        return None
    server, user = shown_storage(tracking_uri), os.environ.get(USERNAME_ENV)
    if status == 403:
        return (f"the MLflow server {server} does not let user {user!r} do this (HTTP 403): ask its admin for "
                "the permission")
    if not user or not os.environ.get(PASSWORD_ENV):
        return (f"the MLflow server {server} asks for a login (HTTP 401): set {USERNAME_ENV} and {PASSWORD_ENV} "
                "to an account of the server")
    return (f"the MLflow server {server} refused the login of user {user!r} (HTTP 401): check {USERNAME_ENV} and "
            f"{PASSWORD_ENV}")
