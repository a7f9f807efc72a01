"""One MLflow tracking store as automil uses it: a :class:`Store` around ``MlflowClient`` (one experiment
per dataset, searches page by page, batched logging) and the guards every call goes through (retries
while another process holds sqlite's write lock, a lock while the tables are created, quiet logs)."""

from __future__ import annotations

import logging
import os
import time
from contextlib import contextmanager
from pathlib import Path

from automil.track.store.locations import artifact_root, default_tracking_uri, reach_database, sqlite_path
from automil.track.store.names import DATASET_TAG, KIND_UI_TAG, NOTE_TAG

__all__ = ["Store", "retry", "quote", "quiet_mlflow", "global_tracking_uri", "LOCKED", "INSERTED_BY_ANOTHER"]

# MLflow's (sqlite's) words when another process holds the write lock.
LOCKED = ("database is locked",)
# The words of sqlite and PostgreSQL when another process inserted the same row first: MLflow looks a dataset
# up, then inserts it, so two workers logging the same bags to one experiment can both miss it; the loser's
# second attempt finds the winner's row.
INSERTED_BY_ANOTHER = LOCKED + ("UNIQUE constraint failed", "duplicate key value violates unique constraint")
BATCH_METRICS = 1000  # MLflow's limits per log_batch call
BATCH_PARAMS_TAGS = 100
PAGE = 1000  # runs per page of a search


class Store:
    """An MLflow tracking store: the client, the experiment of each dataset, searches and batched writes.
    Other writes are one ``retry(store.client.<method>, ...)`` each.

    Parameters
    ----------
    tracking_uri : str, optional
        Any MLflow tracking URI (``sqlite:///...``, ``postgresql://...``, ``http://host:5000``). Default:
        ``$MLFLOW_TRACKING_URI``, else ``sqlite:///<cwd>/mlruns/mlflow.db`` with artifacts under
        ``<cwd>/mlruns/`` (MLflow 3 refuses a plain-file store, so the artifact location is set
        explicitly).
    create : bool
        With ``False``, a sqlite store that does not exist is a ``ValueError`` instead of a new, empty
        database (for commands that only read).

    Attributes
    ----------
    tracking_uri : str
    client : mlflow.MlflowClient
    """

    def __init__(self, tracking_uri: str | None = None, create: bool = True):
        from mlflow import MlflowClient

        self.tracking_uri = tracking_uri or default_tracking_uri()
        reach_database(self.tracking_uri)
        sqlite_file = sqlite_path(self.tracking_uri)
        if sqlite_file is not None:
            if not create and not sqlite_file.exists():
                raise ValueError(f"no tracking store at {sqlite_file}: run automil tune first, or pass "
                                 "--tracking-uri")
            sqlite_file.parent.mkdir(parents=True, exist_ok=True)
        # The first use creates or migrates the tables; processes doing it at once break each other.
        with quiet_mlflow(logging.WARNING), directory_lock(None if sqlite_file is None else sqlite_file.parent):
            self.client = MlflowClient(tracking_uri=self.tracking_uri)
            self.client.search_experiments(max_results=1)

    def experiment_id(self, dataset: str) -> str:
        """The experiment of ``dataset`` (named after it), created on first use; a deleted one is
        restored so that its runs come back."""
        from mlflow.exceptions import MlflowException

        experiment = self.client.get_experiment_by_name(dataset)
        if experiment is None:
            root = artifact_root(self.tracking_uri)
            try:
                return retry(self.client.create_experiment, dataset,
                             artifact_location=None if root is None else f"{root}/{safe_name(dataset)}",
                             tags={DATASET_TAG: dataset, KIND_UI_TAG: "custom_model_development",
                                   NOTE_TAG: f"automil studies on {dataset}: one parent run per learner, "
                                             "one nested run per Optuna trial"})
            except MlflowException:  # created meanwhile by a concurrent process
                experiment = self.client.get_experiment_by_name(dataset)
                if experiment is None:
                    raise
        if experiment.lifecycle_stage == "deleted":
            retry(self.client.restore_experiment, experiment.experiment_id)
        return experiment.experiment_id

    def dataset_experiments(self, datasets=None) -> list[tuple[str, str]]:
        """``(dataset, experiment id)`` of every active automil experiment, optionally only of ``datasets``."""
        from mlflow.entities import ViewType

        wanted = None if not datasets else set(datasets)
        found = []
        for experiment in self.client.search_experiments(view_type=ViewType.ACTIVE_ONLY):
            dataset = experiment.tags.get(DATASET_TAG)
            if dataset is not None and (wanted is None or dataset in wanted):
                found.append((dataset, experiment.experiment_id))
        return found

    def search(self, experiment_id: str, filter_string: str) -> list:
        """Every active run of the experiment that matches ``filter_string``, page by page."""
        runs, token = [], None
        while True:
            page = retry(self.client.search_runs, [experiment_id], filter_string, max_results=PAGE,
                         page_token=token)
            runs += list(page)
            token = page.token
            if not token:
                return runs

    def log_batch(self, run_id: str, metrics=(), params: dict | None = None, tags: dict | None = None) -> None:
        """Metrics ``(key, value, timestamp ms, step)``, params and tags of one run, in ``log_batch`` calls
        within MLflow's limits (usually one)."""
        from mlflow.entities import Metric, Param, RunTag

        metrics = [Metric(key, float(value), int(timestamp), int(step))
                   for key, value, timestamp, step in metrics]
        entries = [Param(k, v) for k, v in (params or {}).items()] + \
                  [RunTag(k, str(v)) for k, v in (tags or {}).items()]
        while True:
            batch_metrics, metrics = metrics[:BATCH_METRICS], metrics[BATCH_METRICS:]
            batch_entries, entries = entries[:BATCH_PARAMS_TAGS], entries[BATCH_PARAMS_TAGS:]
            retry(self.client.log_batch, run_id,
                  metrics=batch_metrics,
                  params=[e for e in batch_entries if isinstance(e, Param)],
                  tags=[e for e in batch_entries if isinstance(e, RunTag)])
            if not metrics and not entries:
                return

    def terminate(self, run_id: str, status: str = "FINISHED", end_time: int | None = None) -> None:
        """Mark the run ended with ``status`` (an MLflow run status)."""
        retry(self.client.set_terminated, run_id, status=status, end_time=end_time)


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


def quote(value: str) -> str:
    """A string literal for MLflow's search filter."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def safe_name(name: str) -> str:
    """``name`` as one folder name (an experiment's artifact folder)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "experiment"


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
