"""Where MLflow keeps automil's runs: the store's URI, artifact location, tag keys, and the guards every
call to the store goes through (retries on a locked sqlite file, quiet logs, a lock for table creation)."""

from __future__ import annotations

import json
import logging
import math
import os
import time
from contextlib import contextmanager
from pathlib import Path

from automil.records import TIMED_OUT
from automil.uris import shown_storage

DEFAULT_STORE_DIR = "mlruns"
DEFAULT_DB_NAME = "mlflow.db"
MODEL_NAME = "model"

# Tag keys. MLflow's own ``mlflow.*`` tags drive the UI (nesting, descriptions).
KIND_TAG = "automil.kind"  # "study" (parent run) or "trial" (nested run)
STUDY_TAG = "automil.study"
TRIAL_TAG = "automil.trial"
STATE_TAG = "automil.state"
STATUS_TAG = "automil.status"  # on a parent run: the driver's status, "T/O" when every trial timed out
PARENT_TAG = "mlflow.parentRunId"
NOTE_TAG = "mlflow.note.content"
KIND_UI_TAG = "mlflow.experimentKind"  # the UI opens a model-training experiment on its runs table

# Optuna trial state -> MLflow run status. The exact outcome is in the STATE_TAG tag.
RUN_STATUS = {"COMPLETE": "FINISHED", "PRUNED": "KILLED", "FAIL": "FAILED", TIMED_OUT: "FAILED"}

# Trial user attributes logged as tags (the driver writes them; see automil.tune.trials).
TRIAL_TAG_ATTRS = ("learner", "plugin", "plugin_version", "dataset", "seed", "n_features", "n_classes",
                    "timed_out", "one_class", "out_of_memory", "interrupted", "error", "warm_start_from")
# Numbers of a leaderboard row that describe the set-up rather than measure anything: tags, not metrics.
RESULT_TAG_KEYS = ("seed", "folds", "best_trial")
MAX_TAG_CHARS = 5000  # MLflow allows 8000; an error message longer than this is cut
MAX_PARAM_CHARS = 6000
BATCH_METRICS = 1000  # MLflow's limits per log_batch call
BATCH_PARAMS_TAGS = 100


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



@contextmanager
def quiet_mlflow(level=logging.ERROR):
    """Hold back MLflow's chatter (table creation, pickling advice, signature inference) that would
    interleave with automil's own progress lines; errors still show."""
    logger = logging.getLogger("mlflow")
    previous = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(previous)


@contextmanager
def global_tracking_uri(uri):
    """MLflow's global tracking URI set to ``uri`` for the block, then restored (unset if it was)."""
    import mlflow

    previous = mlflow.get_tracking_uri() if mlflow.is_tracking_uri_set() else None
    mlflow.set_tracking_uri(uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(previous)


@contextmanager
def directory_lock(directory: Path | None):
    """Hold an exclusive lock on ``directory`` for the block (Linux and macOS; elsewhere, or for ``None``,
    nothing). Two ``automil tune`` started together on a new sqlite store would otherwise both create
    its tables, and MLflow's migrations then fail in all but one (that one tunes without tracking)."""
    try:
        import fcntl
    except ImportError:
        fcntl = None
    if directory is None or fcntl is None:
        yield
        return
    handle = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released on close, or when the process dies
        yield
    finally:
        os.close(handle)


# MLflow's words for a write to a deleted run; another worker merging a study's parents deletes runs.
RUN_DELETED = "must be in the 'active' state"
MERGE_ATTEMPTS = 5


# MLflow's (sqlite's) words when another process holds the write lock.
LOCKED = ("database is locked",)
# The words of sqlite and PostgreSQL when another process inserted the same row first: MLflow looks a dataset
# up, then inserts it, so two workers logging the same bags to one experiment can both miss it; the loser's
# second attempt finds the winner's row.
INSERTED_BY_ANOTHER = LOCKED + ("UNIQUE constraint failed", "duplicate key value violates unique constraint")


def retry(call, *args, attempts=8, transient: tuple[str, ...] = LOCKED, **kwargs):
    """Run one store call, again (after a growing pause) while it fails with an error naming one of
    ``transient``: by default, while another process holds sqlite's write lock."""
    from mlflow.exceptions import MlflowException

    for attempt in range(attempts):
        try:
            return call(*args, **kwargs)
        except MlflowException as error:
            if not any(words in str(error) for words in transient) or attempt == attempts - 1:
                raise
            time.sleep(0.05 * 2**attempt)


def jsonable(value):
    """JSON for numpy scalars and arrays in a result row."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)



def finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def millis(moment) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


def clip_text(value, limit) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=jsonable) \
        if isinstance(value, (list, dict)) else str(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def quote(value: str) -> str:
    """A string literal for MLflow's search filter."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "experiment"
