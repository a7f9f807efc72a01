"""Everything MLflow, and only here: studies, trials and final results as runs in a tracking store.

Layout: one MLflow experiment per dataset, one parent run per learner-dataset study, one nested run per
Optuna trial. The driver calls a :class:`Tracker`; learners never log anything themselves. Every call
names its run explicitly (``MlflowClient`` with run ids, never the fluent run stack), so several studies
and processes can log to one store at the same time.
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from mlflow.pyfunc import PythonModel

import automil
from automil.leaderboard import row_status
from automil.storage import shown_storage
from automil.trial_states import best_trial, trial_counts

__all__ = ["Tracker", "BagModel", "default_tracking_uri", "start_ui", "trial_state"]

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
TIMED_OUT = "T/O"

# Optuna trial state -> MLflow run status. The exact outcome is in the STATE_TAG tag.
_RUN_STATUS = {"COMPLETE": "FINISHED", "PRUNED": "KILLED", "FAIL": "FAILED", TIMED_OUT: "FAILED"}

# Trial user attributes logged as tags (the driver writes them; see automil.tuning).
_TRIAL_TAG_ATTRS = ("learner", "plugin", "plugin_version", "dataset", "seed", "n_features", "n_classes",
                    "timed_out", "one_class", "out_of_memory", "interrupted", "error")
# Numbers of a leaderboard row that describe the set-up rather than measure anything: tags, not metrics.
_RESULT_TAG_KEYS = ("seed", "folds", "best_trial")
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


def _reach_database(tracking_uri: str):
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


def start_ui(tracking_uri: str | None = None, host: str = "127.0.0.1", port: int = 5000):
    """Start ``mlflow server`` on the store ``tracking_uri`` (default: as :class:`Tracker`), serving the
    MLflow UI at ``http://host:port``; returns the ``subprocess.Popen``.

    Artifacts that the UI uploads go next to a sqlite database, like automil's own. MLflow's job
    runner (a pool of background workers for GenAI evaluation jobs) is switched off: the UI does not
    need it to show runs, and on a small machine its processes compete with tuning.
    """
    import subprocess
    import sys

    uri = tracking_uri or default_tracking_uri()
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri, "--host", host,
               "--port", str(port), "--workers", "1"]
    root = artifact_root(uri)
    if root is not None:
        _sqlite_path(uri).parent.mkdir(parents=True, exist_ok=True)
        command += ["--artifacts-destination", root]
    return subprocess.Popen(command, env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})


@contextmanager
def _quiet_mlflow(level=logging.ERROR):
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
def _global_tracking_uri(uri):
    """MLflow's global tracking URI set to ``uri`` for the block, then restored (unset if it was)."""
    import mlflow

    previous = mlflow.get_tracking_uri() if mlflow.is_tracking_uri_set() else None
    mlflow.set_tracking_uri(uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(previous)


@contextmanager
def _directory_lock(directory: Path | None):
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
_RUN_DELETED = "must be in the 'active' state"
_MERGE_ATTEMPTS = 5


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
        _reach_database(self.tracking_uri)
        sqlite_file = _sqlite_path(self.tracking_uri)
        if sqlite_file is not None:
            if not create and not sqlite_file.exists():
                raise ValueError(f"no tracking store at {sqlite_file}: run automil tune first, or pass "
                                 "--tracking-uri")
            sqlite_file.parent.mkdir(parents=True, exist_ok=True)
        # The first use creates or migrates the tables; processes doing it at once break each other.
        with _quiet_mlflow(logging.WARNING), _directory_lock(None if sqlite_file is None else sqlite_file.parent):
            self.client = MlflowClient(tracking_uri=self.tracking_uri)
            self.client.search_experiments(max_results=1)
        self._logged_trials: dict[str, dict[int, str]] = {}  # study name -> {trial number: run id}
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
                              tags={"automil.dataset": dataset, KIND_UI_TAG: "custom_model_development",
                                    NOTE_TAG: f"automil studies on {dataset}: one parent run per learner, "
                                              "one nested run per Optuna trial"})
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
        two processes create it at the same moment, the older run is kept (see :meth:`_one_parent`).
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
        from mlflow.exceptions import MlflowException

        for attempt in range(_MERGE_ATTEMPTS):
            try:
                run = self._open_parent(experiment_id, study_name, learner_spec.name, all_tags)
                break
            except MlflowException as error:
                # a third worker's merge deleted the run this one kept (or a trial copy it re-tagged):
                # look again, and the newest search says which parent survives
                if _RUN_DELETED not in str(error) or attempt == _MERGE_ATTEMPTS - 1:
                    raise
        self._parents[run.info.run_id] = run
        return run.info.run_id

    def _open_parent(self, experiment_id, study_name: str, run_name: str, tags: dict):
        same_study = f"tags.`{STUDY_TAG}` = {_quote(study_name)} and tags.`{KIND_TAG}` = 'study'"
        parents = _retry(self.client.search_runs, [experiment_id], same_study, max_results=50)
        if not parents:
            _retry(self.client.create_run, experiment_id, run_name=run_name, tags=tags)
            # another process may have created one meanwhile: look again, and keep the oldest
            parents = _retry(self.client.search_runs, [experiment_id], same_study, max_results=50)
        run = self._one_parent(experiment_id, parents, study_name)
        self._log_batch(run.info.run_id, tags=tags)
        if run.info.status != "RUNNING":
            _retry(self.client.update_run, run.info.run_id, status="RUNNING")
        return run

    def _one_parent(self, experiment_id, parents: list, study_name: str):
        """The study's one parent run: the oldest (by start time, then run id) of ``parents``, the
        study's parent runs in the store.

        Processes that open a new study at the same moment each create a parent, and one that looked
        before the other's run was stored keeps its own for a while. Every opening of the study (each
        worker opens it again before its final sweep) therefore merges: trial runs under any other
        parent move to the oldest one, and the others are deleted.
        """
        keep = min(parents, key=lambda r: (r.info.start_time, r.info.run_id))
        for other in parents:
            if other.info.run_id != keep.info.run_id:
                _retry(self.client.delete_run, other.info.run_id)
        trial_runs = self._one_run_per_trial(self._search_all(experiment_id, self._trial_filter(study_name)))
        for run in trial_runs:
            if run.data.tags.get(PARENT_TAG) != keep.info.run_id:
                _retry(self.client.set_tag, run.info.run_id, PARENT_TAG, keep.info.run_id)
        # what is logged so far, so that the final sweep asks the store only about trials logged since
        self._logged_trials[study_name] = {int(run.data.tags[TRIAL_TAG]): run.info.run_id for run in trial_runs}
        return keep

    def _one_run_per_trial(self, trial_runs: list) -> list:
        """``trial_runs`` (of one study) with one run per trial number: the lowest run id. The other
        copies are deleted once they are finished (a running one is still being written).

        Two processes can log one trial at the same moment (one's final sweep meets a trial the other has
        just finished). Each finishes its run and then searches again, so the last of them sees every copy
        finished, and the rule picks the same run whoever applies it.
        """
        kept = {}
        for run in sorted(trial_runs, key=lambda r: r.info.run_id):
            number = int(run.data.tags[TRIAL_TAG])
            if number not in kept:
                kept[number] = run
            elif run.info.status != "RUNNING":
                _retry(self.client.delete_run, run.info.run_id)
        return list(kept.values())

    def _trial_run_id(self, parent_run_id, number: int, fresh: bool = False) -> str | None:
        """The run id of trial ``number`` of the parent's study, if logged (by any process, under any
        parent of the study): the copy :meth:`_one_run_per_trial` keeps. ``fresh`` asks the store even
        when this process knows an id (another process may have deleted that copy since)."""
        parent = self._parent(parent_run_id)
        study_name = parent.data.tags[STUDY_TAG]
        known = self._logged_trials.setdefault(study_name, {})
        if fresh or number not in known:
            copies = _retry(self.client.search_runs, [parent.info.experiment_id],
                            self._trial_filter(study_name, number))
            if not copies:
                return None
            known[number] = min(run.info.run_id for run in copies)
        return known[number]

    @staticmethod
    def _trial_filter(study_name: str, number: int | None = None) -> str:
        """The search for the study's trial runs, or for trial ``number``'s."""
        runs = f"tags.`{KIND_TAG}` = 'trial' and tags.`{STUDY_TAG}` = {_quote(study_name)}"
        return runs if number is None else f"{runs} and tags.`{TRIAL_TAG}` = {_quote(str(number))}"

    def _parent(self, parent_run_id):
        if parent_run_id not in self._parents:
            self._parents[parent_run_id] = self.client.get_run(parent_run_id)
        return self._parents[parent_run_id]

    # ---- trials ------------------------------------------------------------------------------------
    def log_trial(self, parent_run_id: str, frozen_trial, study_name: str) -> str:
        """One nested run for a finished Optuna trial (``optuna.trial.FrozenTrial``); returns its id.

        Idempotent per trial number: a trial of the study already logged (by this or any other process)
        is not logged again, and its existing run id is returned; processes logging one trial at once
        leave one run. The run holds

        - params: ``trial.params``;
        - metrics: ``accuracy``, ``balanced_accuracy`` and their ``*_std`` over folds, ``fold_accuracy``
          and ``fold_balanced_accuracy`` per fold (``step`` = fold index), ``fit_seconds`` and
          ``predict_seconds`` (mean over folds), ``objective`` (the trial's value) and ``trial_seconds``;
        - tags: learner, plugin and its version, dataset, study, trial number, state (COMPLETE, PRUNED,
          FAIL or T/O), automil version, seed, ``n_features``, ``n_classes``, and ``timed_out``,
          ``one_class`` and ``error`` when set.

        Everything after the run's creation goes in one ``log_batch`` call.
        """
        if not frozen_trial.state.is_finished():
            raise ValueError(f"trial {frozen_trial.number} of study {study_name!r} is still "
                             f"{frozen_trial.state.name}: log it once it has finished")
        number = int(frozen_trial.number)
        logged = self._trial_run_id(parent_run_id, number)
        if logged is not None:
            return logged
        parent = self._parent(parent_run_id)
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
        run = _retry(self.client.create_run, parent.info.experiment_id, start_time=start,
                     run_name=f"trial {number}", tags=tags)
        run_id = run.info.run_id
        params = {name: _text(value, _MAX_PARAM_CHARS) for name, value in frozen_trial.params.items()}
        timestamp = end or int(time.time() * 1000)
        self._log_batch(run_id, metrics=[(key, value, timestamp, step) for key, value, step in metrics],
                        params=params)
        _retry(self.client.set_terminated, run_id, status=_RUN_STATUS.get(state, "FINISHED"), end_time=end)
        copies = self._search_all(parent.info.experiment_id, self._trial_filter(study_name, number))
        run_id = self._one_run_per_trial(copies)[0].info.run_id
        self._logged_trials[study_name][number] = run_id
        return run_id

    # ---- final results -----------------------------------------------------------------------------
    def log_result(self, parent_run_id: str, result: dict, model=None, bags=None, study=None) -> None:
        """The final evaluation of a study on its parent run, which is then marked finished.

        Parameters
        ----------
        parent_run_id : str
            From :meth:`study_run`.
        result : dict
            The driver's leaderboard row. Every finite number becomes a metric under its own key (a dict
            of numbers ``{"k": {"a": 1}}`` becomes ``k_a``, a list of numbers one metric with a step per
            entry), every string a tag ``automil.<key>``; ``best_params`` become tags ``best.<name>``
            (tags, not params: MLflow params cannot change, and a resumed study can find a new best).
            The headline figures are expected under ``accuracy``, ``balanced_accuracy`` and their
            ``*_std``; ``confusion_matrix`` (rows true, columns predicted, out-of-fold counts) with
            ``classes``, when present, is drawn instead of predicting ``bags``. Missing keys are skipped.
        model : estimator, optional
            The fitted best model (``automil.evaluation.Standardized``), logged as the MLflow pyfunc
            model ``model`` (see :class:`BagModel` for the input format).
        bags : Bags, optional
            Labelled bags (the driver gives the dataset): the confusion matrix of ``model`` on them when
            ``result`` has none, two of them as the model's input example, and, for a witness learner on
            image-like bags, the witness and coefficient figures.
        study : optuna.Study, optional
            For the trial counts, the optimization history and the parameter importances.
        """
        trials = list(study.get_trials(deepcopy=False)) if study is not None else []
        metrics, tags, n_trials = _result_entries(result, study)
        best = result.get("best_trial")
        if best is None and study is not None:
            best = getattr(best_trial(study), "number", None)
        if best is not None:
            tags["automil.best_trial"] = str(best)
            run_id = self._trial_run_id(parent_run_id, int(best), fresh=True)
            if run_id is not None:
                tags["automil.best_trial_run"] = run_id
        # A resumed study logs its result again: step = trials so far keeps the history readable, and
        # MLflow shows the value of the highest step.
        now = int(time.time() * 1000)
        self._log_batch(parent_run_id, tags=tags,
                        metrics=[(key, value, now, n_trials if index is None else index)
                                 for key, value, index in metrics])
        status = "FAILED"
        try:
            with tempfile.TemporaryDirectory(prefix="automil-figures-") as tmp:
                failures = _write_figures(Path(tmp), result, model, bags, study, trials)
                (Path(tmp) / "result.json").write_text(json.dumps(result, indent=2, default=_jsonable))
                _retry(self.client.log_artifacts, parent_run_id, tmp)
            if failures:
                self._log_batch(parent_run_id, tags={"automil.figure_errors": _text(failures, _MAX_TAG_CHARS)})
            if model is not None:
                self.log_model(parent_run_id, model, bags)
            status = "FINISHED"
        finally:  # a parent never stays "running" after its result; FAILED if the model could not be logged
            _retry(self.client.set_terminated, parent_run_id, status=status)

    def end_study(self, parent_run_id: str) -> None:
        """Mark the parent run ``FINISHED`` again after a sweep that logged no result (the result was
        logged before, by this or another process, and :meth:`study_run` marked the run running)."""
        _retry(self.client.set_terminated, parent_run_id, status="FINISHED")

    def log_model(self, parent_run_id: str, model, bags=None) -> str:
        """Log ``model`` as the pyfunc model ``model`` of the run; returns its ``models:/`` URI (also
        in the run's tag ``automil.model_uri``; ``runs:/<run id>/model`` loads it too)."""
        import mlflow
        from mlflow.models import Model

        parent = self._parent(parent_run_id)
        logged = _retry(self.client.create_logged_model, parent.info.experiment_id, name=MODEL_NAME,
                        source_run_id=parent_run_id,
                        tags={"automil.learner": parent.data.tags.get("automil.learner", ""),
                              "automil.dataset": parent.data.tags.get("automil.dataset", "")})
        example = None
        if bags is not None and bags.n_bags and not bags.is_sparse:
            example = [bags[i].tolist() for i in range(min(2, bags.n_bags))]
        with _quiet_mlflow(), _global_tracking_uri(self.tracking_uri):  # Model.log reads the global URI
            info = Model.log(artifact_path=None, name=MODEL_NAME, flavor=mlflow.pyfunc,
                             python_model=BagModel(model), run_id=parent_run_id, model_id=logged.model_id,
                             input_example=example, pip_requirements=_requirements(model),
                             metadata={"classes": [_jsonable(c) for c in getattr(model, "classes_", [])],
                                       "input": BagModel.INPUT_FORMAT})
        self._log_batch(parent_run_id, tags={"automil.model_uri": info.model_uri})
        return info.model_uri

    # ---- reading back ------------------------------------------------------------------------------
    def studies(self, datasets=None) -> list[dict]:
        """Every study (parent run) in the store, optionally only of some datasets.

        Each entry: ``dataset``, ``learner``, ``study``, ``status`` ("ok", "T/O", "failed", or "" before
        a result is logged), ``run_id``, ``end_time`` (ms), ``metrics`` and ``tags`` (dicts).
        """
        from mlflow.entities import ViewType

        wanted = None if not datasets else set(datasets)
        out = []
        for experiment in self.client.search_experiments(view_type=ViewType.ACTIVE_ONLY):
            dataset = experiment.tags.get("automil.dataset")
            if dataset is None or (wanted is not None and dataset not in wanted):
                continue
            for run in self._search_all(experiment.experiment_id, f"tags.`{KIND_TAG}` = 'study'"):
                tags = run.data.tags
                out.append({"dataset": dataset, "learner": tags.get("automil.learner", run.info.run_name),
                            "study": tags.get(STUDY_TAG, ""), "status": tags.get(STATUS_TAG, ""),
                            "run_id": run.info.run_id, "end_time": run.info.end_time or 0,
                            "metrics": dict(run.data.metrics), "tags": dict(tags)})
        return out

    # ---- low level ---------------------------------------------------------------------------------
    def _search_all(self, experiment_id, filter_string) -> list:
        """Every active run of the experiment that matches, page by page."""
        runs, token = [], None
        while True:
            page = _retry(self.client.search_runs, [experiment_id], filter_string, max_results=1000,
                          page_token=token)
            runs += list(page)
            token = page.token
            if not token:
                return runs

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


class BagModel(PythonModel):
    """The MLflow pyfunc face of a fitted bag classifier: predicts bag labels from a list of bags.

    Input: a list of bags, each bag a list of instances, each instance a list of ``n_features`` floats
    (a 2-D array as nested lists: ``[bag.tolist() for bag in bags]``); bags may differ in size. This is
    also the JSON a served model takes: ``{"inputs": [[[0.1, 2.0], [0.3, 1.5]], [[...]]]}``. MLflow
    checks the input against the signature (``Array(Array(double))``) before the model sees it, and
    rejects numpy arrays inside the list, hence ``tolist()``. Output: one label per bag, in the
    classes of the training labels (``metadata["classes"]`` of the logged model).

    Parameters
    ----------
    estimator : fitted estimator
        ``automil.evaluation.Standardized(learner)``, so the loaded model standardizes new bags with the
        statistics of its own training bags.
    """

    INPUT_FORMAT = ("list of bags; each bag a list of instances (rows), each a list of n_features floats: "
                    "[bag.tolist() for bag in bags]")

    def __init__(self, estimator):
        self.estimator = estimator

    def predict(self, model_input: list[list[list[float]]], params=None) -> list[int]:
        """Labels of the bags in ``model_input`` (see the class docstring for the format)."""
        import numpy as np

        bags = []
        for index, bag in enumerate(model_input):
            instances = np.asarray(bag, dtype=np.float64)
            if instances.ndim != 2 or len(instances) == 0:
                raise ValueError(f"bag {index}: expected a non-empty list of instances (a 2-D array "
                                 f"n_instances x n_features), got shape {instances.shape}")
            bags.append(instances)
        return self.estimator.predict(bags).tolist()


def _result_entries(result: dict, study) -> tuple[list, dict, int]:
    """Metrics ``(key, value, step or None)``, tags and the trial count of a leaderboard row.

    The trial counts (``trials``, ``trials_complete``, ``trials_pruned``, ``trials_failed``,
    ``trials_timed_out``) and the ``status`` come from the row when the driver wrote them, else from the
    study's trials, counted and judged as the leaderboard does.
    """
    metrics, tags = [], {}
    for key, value in result.items():
        if key in ("best_params", "confusion_matrix", "classes") or value is None:
            continue
        if _finite(value) and key not in _RESULT_TAG_KEYS:
            metrics.append((key, float(value), None))
        elif isinstance(value, dict) and value and all(_finite(v) for v in value.values()):
            metrics.extend((f"{key}_{sub}", float(v), None) for sub, v in value.items())
        elif isinstance(value, (list, tuple)) and value and all(_finite(v) for v in value):
            metrics.extend((key, float(v), index) for index, v in enumerate(value))
        else:
            tags[f"automil.{key}"] = _text(value, _MAX_TAG_CHARS)
    best_params = result.get("best_params") or {}
    tags.update({f"best.{name}": _text(value, _MAX_TAG_CHARS) for name, value in best_params.items()})
    tags["automil.best_params"] = _text(best_params, _MAX_TAG_CHARS)
    n_trials = int(result["trials"]) if _finite(result.get("trials")) else 0
    if study is not None and not (_finite(result.get("trials")) and result.get("status")):
        counts, _ = trial_counts(study)
        if not _finite(result.get("trials")):
            metrics.extend((key, float(value), None) for key, value in counts.items())
            n_trials = counts["trials"]
        if not result.get("status"):
            tags[STATUS_TAG] = row_status(result, counts, best_trial(study), [])
    return metrics, tags, n_trials


def _write_figures(folder: Path, result, model, bags, study, trials) -> dict:
    """The PNGs of one study into ``folder/figures``; each one that does not apply is skipped. A figure
    whose drawing raises (a third-party learner's ``witness``, say) is left out and its error returned
    as ``{name: message}``, so that a picture never costs the result."""
    out = folder / "figures"
    out.mkdir()
    failures = {}
    for name, draw in _figures(result, model, bags, study, trials):
        try:
            draw().savefig(out / f"{name}.png", dpi=100)
        except Exception as error:  # noqa: BLE001 - reported in a tag of the run
            failures[name] = f"{type(error).__name__}: {error}"
    return failures


def _figures(result, model, bags, study, trials):
    """``(name, draw)`` pairs of the figures that apply; ``draw()`` returns the Figure."""
    from automil import figures

    classes = result.get("classes") if result.get("classes") is not None else getattr(model, "classes_", None)
    if result.get("confusion_matrix") is not None and classes is not None:
        yield "confusion_matrix", lambda: figures.confusion_matrix_figure(
            result["confusion_matrix"], classes, "Confusion matrix\n(out-of-fold predictions)")
    elif model is not None and bags is not None and bags.y is not None:
        from sklearn.metrics import confusion_matrix

        yield "confusion_matrix", lambda: figures.confusion_matrix_figure(
            confusion_matrix(bags.y, model.predict(bags), labels=model.classes_), model.classes_,
            f"Confusion matrix of the final\nmodel on {bags.n_bags} bags")
    if study is not None:
        direction = study.direction.name.lower() if len(study.directions) == 1 else "maximize"
        yield "optimization_history", lambda: figures.optimization_history_figure(
            [(t.number, trial_state(t), t.value) for t in trials], direction,
            str(result.get("metric", "objective")))
        yield "param_importances", lambda: figures.param_importances_figure(*_importances(study, trials))
    shape = figures.image_shape(bags) if bags is not None else None
    if model is None or shape is None:
        return
    inner = getattr(model, "estimator_", model)
    if getattr(inner, "_witness", None) is not None:
        yield "witness", lambda: figures.witness_figure(bags, model.witness(bags), model.predict(bags), shape)
    coef = _coefficients(model)
    if coef is not None and coef.shape[1] == shape[0] * shape[1]:
        labels = model.classes_ if len(coef) == len(model.classes_) else [model.classes_[-1]]
        yield "coefficients", lambda: figures.coefficients_figure(coef, shape, labels)


def _importances(study, trials) -> tuple[dict | None, str]:
    import optuna

    complete = [t for t in trials if t.state.name == "COMPLETE"]
    if len(complete) < 2:
        return None, f"needs at least 2 completed trials ({len(complete)} so far)"
    if not any(t.params for t in complete):
        return None, "no hyperparameter was searched"
    try:
        evaluator = optuna.importance.FanovaImportanceEvaluator(seed=0)  # named on the figure
        return optuna.importance.get_param_importances(study, evaluator=evaluator), ""
    except (ValueError, RuntimeError) as error:  # e.g. every trial has the same parameters
        return None, f"not computable: {error}"


def _coefficients(model):
    """The learner's per-class weights, shape ``(n_classes or 1, n_features)``, or ``None`` without
    ``coef_``. They act on standardized features, so every pixel is on the same scale."""
    import numpy as np

    inner = getattr(model, "estimator_", model)
    coef = getattr(inner, "coef_", None)
    d = getattr(model, "n_features_in_", None)
    if coef is None or d is None:
        return None
    coef = np.atleast_2d(np.asarray(coef, dtype=float))
    return coef.T if coef.shape[0] == d and coef.shape[1] != d else coef  # automil's (n_features, K)


def _requirements(model) -> list[str]:
    """Pinned requirements of the pyfunc model: automil, its numerical stack, and the distribution that
    provides the learner's plugin when that is not automil itself (found through its entry point)."""
    from importlib import metadata

    names = ["automil", "mlflow", "numpy", "scipy", "scikit-learn", "numba", "cloudpickle"]
    inner = getattr(model, "estimator_", model)
    top = type(inner).__module__.split(".")[0]
    for entry_point in metadata.entry_points(group="automil"):
        if entry_point.value.split(".")[0].split(":")[0] == top and entry_point.dist is not None:
            if entry_point.dist.name not in names:
                names.append(entry_point.dist.name)
    out = []
    for name in names:
        try:
            out.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return out


def _jsonable(value):
    """JSON for numpy scalars and arrays in a result row."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


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
    for key in ("fold_accuracy", "fold_balanced_accuracy"):
        values = attrs.get(key)
        if isinstance(values, (list, tuple)):
            out.extend((key, value, fold) for fold, value in enumerate(values))
    for key in ("fit_seconds", "predict_seconds"):
        values = attrs.get(key)
        if isinstance(values, (list, tuple)):
            values = [v for v in values if _finite(v)]
            values = sum(values) / len(values) if values else None
        out.append((key, values, 0))
    values = frozen_trial.values or []
    out.append(("objective", values[0] if len(values) == 1 else None, 0))
    if frozen_trial.datetime_start and frozen_trial.datetime_complete:
        out.append(("trial_seconds",
                    (frozen_trial.datetime_complete - frozen_trial.datetime_start).total_seconds(), 0))
    return [(key, float(value), step) for key, value, step in out if _finite(value)]


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _millis(moment) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


def _text(value, limit) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=_jsonable) \
        if isinstance(value, (list, dict)) else str(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _quote(value: str) -> str:
    """A string literal for MLflow's search filter."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "experiment"


def _plugin_version(plugin: str) -> str:
    """The plugin's distribution version; a built-in plugin ships with automil, so automil's."""
    if not plugin:
        return ""
    from automil import plugins

    version = plugins.registry("learners").plugins.get(plugin, "")
    return automil.__version__ if version == "automil" else version
