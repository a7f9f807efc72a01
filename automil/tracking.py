"""Everything MLflow, and only here: studies, trials and final results as runs in a tracking store.

Layout: one MLflow experiment per dataset, one parent run per learner-dataset study, one nested run per
Optuna trial. The driver calls a :class:`Tracker`; learners never log anything themselves. Every call
names its run explicitly (``MlflowClient`` with run ids, never the fluent run stack), so several studies
and processes can log to one store at the same time.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from pathlib import Path

import automil

__all__ = ["Tracker", "default_tracking_uri", "STATE_TAG", "TIMED_OUT"]

DEFAULT_STORE_DIR = "mlruns"
DEFAULT_DB_NAME = "mlflow.db"
MODEL_NAME = "model"

# Tag keys. MLflow's own ``mlflow.*`` tags drive the UI (nesting, descriptions).
KIND_TAG = "automil.kind"  # "study" (parent run) or "trial" (nested run)
STUDY_TAG = "automil.study"
TRIAL_TAG = "automil.trial"
STATE_TAG = "automil.state"
STATUS_TAG = "automil.status"  # on a parent run: "T/O" when every trial timed out
PARENT_TAG = "mlflow.parentRunId"
NOTE_TAG = "mlflow.note.content"
TIMED_OUT = "T/O"

# Optuna trial state -> MLflow run status. The exact outcome is in the STATE_TAG tag.
_RUN_STATUS = {"COMPLETE": "FINISHED", "PRUNED": "KILLED", "FAIL": "FAILED", TIMED_OUT: "FAILED",
               "RUNNING": "RUNNING", "WAITING": "SCHEDULED"}

# Trial user attributes logged as tags (the driver writes them; see automil.tuning).
_TRIAL_TAG_ATTRS = ("learner", "plugin", "plugin_version", "dataset", "seed", "n_features", "n_classes",
                    "timed_out", "one_class", "error")
_MAX_TAG_CHARS = 5000  # MLflow allows 8000; an error message longer than this is cut
_MAX_PARAM_CHARS = 6000
_BATCH_METRICS = 1000  # MLflow's limits per log_batch call
_BATCH_PARAMS_TAGS = 100


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
    path = _sqlite_path(tracking_uri)
    return None if path is None else path.parent.resolve().as_uri()


def _sqlite_path(tracking_uri: str) -> Path | None:
    prefix = "sqlite:///"
    if not tracking_uri.startswith(prefix) or tracking_uri.startswith(prefix + ":memory:"):
        return None
    return Path(tracking_uri[len(prefix):].split("?", 1)[0])


def _retry(call, *args, attempts=8, **kwargs):
    """Run one store call, retrying when another process holds sqlite's write lock."""
    from mlflow.exceptions import MlflowException

    for attempt in range(attempts):
        try:
            return call(*args, **kwargs)
        except MlflowException as error:
            if "database is locked" not in str(error) or attempt == attempts - 1:
                raise
            time.sleep(0.05 * 2**attempt)


class Tracker:
    """Logs automil studies to one MLflow tracking store.

    Parameters
    ----------
    tracking_uri : str, optional
        Any MLflow tracking URI (``sqlite:///...``, ``postgresql://...``, ``http://host:5000``). Default:
        ``$MLFLOW_TRACKING_URI``, else ``sqlite:///<cwd>/mlruns/mlflow.db`` with artifacts under
        ``<cwd>/mlruns/`` (MLflow 3 refuses a plain-file store, so the artifact location is set
        explicitly).

    Attributes
    ----------
    tracking_uri : str
    client : mlflow.MlflowClient
    """

    def __init__(self, tracking_uri: str | None = None):
        from mlflow import MlflowClient

        self.tracking_uri = tracking_uri or default_tracking_uri()
        sqlite_file = _sqlite_path(self.tracking_uri)
        if sqlite_file is not None:
            sqlite_file.parent.mkdir(parents=True, exist_ok=True)
        self.client = MlflowClient(tracking_uri=self.tracking_uri)
        self._logged_trials: dict[str, dict[int, str]] = {}  # parent run id -> {trial number: run id}
        self._parents: dict[str, object] = {}  # parent run id -> its Run (experiment id, tags)

    # ---- experiments and parent runs ---------------------------------------------------------------
    def experiment_id(self, dataset: str) -> str:
        """The experiment of ``dataset`` (named after it), created on first use; a deleted one is
        restored so that its runs come back."""
        from mlflow.exceptions import MlflowException

        experiment = self.client.get_experiment_by_name(dataset)
        if experiment is None:
            root = artifact_root(self.tracking_uri)
            try:
                return _retry(self.client.create_experiment, dataset,
                              artifact_location=None if root is None else f"{root}/{_safe_name(dataset)}",
                              tags={"automil.dataset": dataset, NOTE_TAG: f"automil studies on {dataset}: "
                                    "one parent run per learner, one nested run per Optuna trial"})
            except MlflowException:  # created meanwhile by a concurrent process
                experiment = self.client.get_experiment_by_name(dataset)
                if experiment is None:
                    raise
        if experiment.lifecycle_stage == "deleted":
            _retry(self.client.restore_experiment, experiment.experiment_id)
        return experiment.experiment_id

    def study_run(self, study_name: str, dataset: str, learner_spec, tags: dict | None = None) -> str:
        """The parent run of one learner-dataset study, created on first use and reused on resume.

        The experiment is named after ``dataset``; the parent run is found by its tag ``automil.study``,
        so calling this again (a resumed study, another worker process) returns the same run id. When
        two processes create it at the same moment, both keep the older run and the younger is deleted.
        The run is (again) marked running until :meth:`log_result`.

        Parameters
        ----------
        study_name : str
            The Optuna study name, e.g. ``"fox/pdmisvm"``.
        dataset : str
        learner_spec : LearnerSpec
            Its name, plugin and description go into tags and the run description.
        tags : dict, optional
            More tags (protocol, folds, seed, ...), set on every call.
        """
        experiment_id = self.experiment_id(dataset)
        plugin = getattr(learner_spec, "plugin", "") or ""
        all_tags = {
            KIND_TAG: "study", STUDY_TAG: study_name, "automil.dataset": dataset,
            "automil.learner": learner_spec.name, "automil.plugin": plugin,
            "automil.plugin_version": _plugin_version(plugin), "automil.version": automil.__version__,
            NOTE_TAG: f"{learner_spec.name} on {dataset}: {getattr(learner_spec, 'description', '')}".strip(),
            **{key: _text(value, _MAX_TAG_CHARS) for key, value in (tags or {}).items()},
        }
        run = self._find_one(experiment_id, f"tags.`{STUDY_TAG}` = {_quote(study_name)} "
                                            f"and tags.`{KIND_TAG}` = 'study'")
        if run is None:
            run = _retry(self.client.create_run, experiment_id, run_name=learner_spec.name, tags=all_tags)
            run = self._oldest_duplicate(experiment_id, run, f"tags.`{STUDY_TAG}` = {_quote(study_name)} "
                                                             f"and tags.`{KIND_TAG}` = 'study'")
        else:
            self._log_batch(run.info.run_id, tags=all_tags)
        if run.info.status != "RUNNING":
            _retry(self.client.update_run, run.info.run_id, status="RUNNING")
        self._parents[run.info.run_id] = run
        return run.info.run_id

    def _find_one(self, experiment_id, filter_string):
        runs = _retry(self.client.search_runs, [experiment_id], filter_string,
                      order_by=["attributes.start_time ASC"], max_results=1)
        return runs[0] if runs else None

    def _oldest_duplicate(self, experiment_id, run, filter_string):
        """After creating ``run``: if a concurrent process created the same one, keep the oldest (by
        start time, then run id, as every process sees it) and delete the others we made."""
        same = _retry(self.client.search_runs, [experiment_id], filter_string, max_results=50)
        if len(same) <= 1:
            return run
        keep = min(same, key=lambda r: (r.info.start_time, r.info.run_id))
        if keep.info.run_id != run.info.run_id:
            _retry(self.client.delete_run, run.info.run_id)
        return keep

    def _parent(self, parent_run_id):
        if parent_run_id not in self._parents:
            self._parents[parent_run_id] = self.client.get_run(parent_run_id)
        return self._parents[parent_run_id]

    # ---- trials ------------------------------------------------------------------------------------
    def log_trial(self, parent_run_id: str, frozen_trial, study_name: str) -> str:
        """One nested run for a finished Optuna trial (``optuna.trial.FrozenTrial``); returns its id.

        Idempotent per trial number: a trial already logged under this parent (by this or any other
        process) is not logged again, and its existing run id is returned. The run holds

        - params: ``trial.params``;
        - metrics: ``accuracy``, ``balanced_accuracy`` and their ``*_std`` over folds, ``fold_accuracy``
          and ``fold_balanced_accuracy`` per fold (``step`` = fold index), ``fit_seconds`` and
          ``predict_seconds`` (mean over folds; per fold in ``fold_fit_seconds``/``fold_predict_seconds``),
          ``objective`` (the trial's value) and ``trial_seconds``;
        - tags: learner, plugin and its version, dataset, study, trial number, state (COMPLETE, PRUNED,
          FAIL or T/O), automil version, seed, ``n_features``, ``n_classes``, and ``timed_out``,
          ``one_class`` and ``error`` when set.

        Everything after the run's creation goes in one ``log_batch`` call.
        """
        number = int(frozen_trial.number)
        known = self._logged_trials.setdefault(parent_run_id, {})
        if number in known:
            return known[number]
        parent = self._parent(parent_run_id)
        experiment_id = parent.info.experiment_id
        trial_filter = (f"tags.`{PARENT_TAG}` = {_quote(parent_run_id)} and "
                        f"tags.`{TRIAL_TAG}` = {_quote(str(number))}")
        existing = self._find_one(experiment_id, trial_filter)
        if existing is not None:
            known[number] = existing.info.run_id
            return known[number]
        attrs = dict(frozen_trial.user_attrs)
        state = trial_state(frozen_trial)
        metrics = _trial_metrics(frozen_trial, attrs)
        tags = {
            KIND_TAG: "trial", PARENT_TAG: parent_run_id, STUDY_TAG: study_name, TRIAL_TAG: str(number),
            STATE_TAG: state, "automil.version": automil.__version__,
            "automil.learner": parent.data.tags.get("automil.learner", ""),
            "automil.dataset": parent.data.tags.get("automil.dataset", ""),
            "automil.plugin": parent.data.tags.get("automil.plugin", ""),
            "automil.plugin_version": parent.data.tags.get("automil.plugin_version", ""),
        }
        for key in _TRIAL_TAG_ATTRS:
            value = attrs.get(key)
            if value is not None and value is not False and value != "":
                tags[f"automil.{key}"] = _text(value, _MAX_TAG_CHARS)
        start = _millis(frozen_trial.datetime_start)
        end = _millis(frozen_trial.datetime_complete)
        run = _retry(self.client.create_run, experiment_id, start_time=start, run_name=f"trial {number}",
                     tags=tags)
        run_id = run.info.run_id
        params = {name: _text(value, _MAX_PARAM_CHARS) for name, value in frozen_trial.params.items()}
        timestamp = end or int(time.time() * 1000)
        self._log_batch(run_id, metrics=[(key, value, timestamp, step) for key, value, step in metrics],
                        params=params)
        _retry(self.client.set_terminated, run_id, status=_RUN_STATUS.get(state, "FINISHED"), end_time=end)
        known[number] = run_id
        return run_id

    # ---- final results -----------------------------------------------------------------------------
    def log_result(self, parent_run_id: str, result: dict, model=None, bags=None, study=None) -> None:
        """The final evaluation of a study on its parent run, which is then marked finished."""
        raise NotImplementedError

    # ---- low level ---------------------------------------------------------------------------------
    def _log_batch(self, run_id, metrics=(), params=None, tags=None):
        """``log_batch`` in chunks within MLflow's limits (usually one call)."""
        from mlflow.entities import Metric, Param, RunTag

        metrics = [Metric(key, float(value), int(timestamp), int(step))
                   for key, value, timestamp, step in metrics]
        entries = [Param(k, v) for k, v in (params or {}).items()] + \
                  [RunTag(k, str(v)) for k, v in (tags or {}).items()]
        while True:
            batch_metrics, metrics = metrics[:_BATCH_METRICS], metrics[_BATCH_METRICS:]
            batch_entries, entries = entries[:_BATCH_PARAMS_TAGS], entries[_BATCH_PARAMS_TAGS:]
            _retry(self.client.log_batch, run_id,
                   metrics=batch_metrics,
                   params=[e for e in batch_entries if isinstance(e, Param)],
                   tags=[e for e in batch_entries if isinstance(e, RunTag)])
            if not metrics and not entries:
                return


def trial_state(frozen_trial) -> str:
    """COMPLETE, PRUNED, FAIL, or T/O for a trial the driver killed at its time-out."""
    if frozen_trial.user_attrs.get("timed_out"):
        return TIMED_OUT
    return frozen_trial.state.name


def _trial_metrics(frozen_trial, attrs) -> list[tuple[str, float, int]]:
    """``(key, value, step)`` of every finite number a trial carries."""
    out = []
    for key in ("accuracy", "balanced_accuracy", "accuracy_std", "balanced_accuracy_std"):
        out.append((key, attrs.get(key), 0))
    for key in ("fold_accuracy", "fold_balanced_accuracy", "fold_fit_seconds", "fold_predict_seconds"):
        values = attrs.get(key.removeprefix("fold_") if key.endswith("seconds") else key)
        if isinstance(values, (list, tuple)):
            out.extend((key, value, fold) for fold, value in enumerate(values))
    for key in ("fit_seconds", "predict_seconds"):
        values = attrs.get(key)
        if isinstance(values, (list, tuple)):
            values = [v for v in values if _finite(v)]
            values = sum(values) / len(values) if values else None
        out.append((key, values, 0))
    out.append(("objective", frozen_trial.value if len(getattr(frozen_trial, "values", None) or ()) <= 1
                else None, 0))
    if frozen_trial.datetime_start and frozen_trial.datetime_complete:
        out.append(("trial_seconds",
                    (frozen_trial.datetime_complete - frozen_trial.datetime_start).total_seconds(), 0))
    return [(key, float(value), step) for key, value, step in out if _finite(value)]


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _millis(moment) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


def _text(value, limit) -> str:
    text = value if isinstance(value, str) else json.dumps(value) if isinstance(value, (list, dict)) \
        else str(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _quote(value: str) -> str:
    """A string literal for MLflow's search filter."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "experiment"


def _plugin_version(plugin: str) -> str:
    if not plugin:
        return ""
    from automil import plugins

    return plugins.registry("learners").plugins.get(plugin, "")
