"""Everything MLflow, and only here: studies, trials and final results as runs in a tracking store.

Layout: one MLflow experiment per dataset, one parent run per learner-dataset study, one nested run per
Optuna trial. The driver calls a :class:`Tracker`; learners never log anything themselves. Every call
names its run explicitly (``MlflowClient`` with run ids, never the fluent run stack), so several studies
and processes can log to one store at the same time.
"""


from __future__ import annotations

import logging
import time

import automil
from automil.records import TrialRecord
from automil.track.results import ResultLogging
from automil.track.store import (BATCH_METRICS, BATCH_PARAMS_TAGS, KIND_TAG, KIND_UI_TAG, MAX_PARAM_CHARS,
                                 MAX_TAG_CHARS, MERGE_ATTEMPTS, NOTE_TAG,
                                 PARENT_TAG, RUN_DELETED, RUN_STATUS, STATE_TAG, STATUS_TAG, STUDY_TAG, TRIAL_TAG,
                                 TRIAL_TAG_ATTRS, artifact_root, default_tracking_uri, directory_lock, finite,
                                 millis, quiet_mlflow, quote, reach_database, retry, safe_name, sqlite_path, clip_text)

__all__ = ["Tracker"]


class Tracker(ResultLogging):
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
                return retry(self.client.create_experiment, dataset,
                              artifact_location=None if root is None else f"{root}/{safe_name(dataset)}",
                              tags={"automil.dataset": dataset, KIND_UI_TAG: "custom_model_development",
                                    NOTE_TAG: f"automil studies on {dataset}: one parent run per learner, "
                                              "one nested run per Optuna trial"})
            except MlflowException:  # created meanwhile by a concurrent process
                experiment = self.client.get_experiment_by_name(dataset)
                if experiment is None:
                    raise
        if experiment.lifecycle_stage == "deleted":
            retry(self.client.restore_experiment, experiment.experiment_id)
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
            **{key: clip_text(value, MAX_TAG_CHARS) for key, value in (tags or {}).items()},
        }
        from mlflow.exceptions import MlflowException

        for attempt in range(MERGE_ATTEMPTS):
            try:
                run = self._open_parent(experiment_id, study_name, learner_spec.name, all_tags)
                break
            except MlflowException as error:
                # a third worker's merge deleted the run this one kept (or a trial copy it re-tagged):
                # look again, and the newest search says which parent survives
                if RUN_DELETED not in str(error) or attempt == MERGE_ATTEMPTS - 1:
                    raise
        self._parents[run.info.run_id] = run
        return run.info.run_id

    def _open_parent(self, experiment_id, study_name: str, run_name: str, tags: dict):
        same_study = f"tags.`{STUDY_TAG}` = {quote(study_name)} and tags.`{KIND_TAG}` = 'study'"
        parents = retry(self.client.search_runs, [experiment_id], same_study, max_results=50)
        if not parents:
            retry(self.client.create_run, experiment_id, run_name=run_name, tags=tags)
            # another process may have created one meanwhile: look again, and keep the oldest
            parents = retry(self.client.search_runs, [experiment_id], same_study, max_results=50)
        run = self._one_parent(experiment_id, parents, study_name)
        self._log_batch(run.info.run_id, tags=tags)
        if run.info.status != "RUNNING":
            retry(self.client.update_run, run.info.run_id, status="RUNNING")
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
                retry(self.client.delete_run, other.info.run_id)
        trial_runs = self._one_run_per_trial(self._search_all(experiment_id, self._trial_filter(study_name)))
        for run in trial_runs:
            if run.data.tags.get(PARENT_TAG) != keep.info.run_id:
                retry(self.client.set_tag, run.info.run_id, PARENT_TAG, keep.info.run_id)
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
                retry(self.client.delete_run, run.info.run_id)
        return list(kept.values())

    def _trial_run_id(self, parent_run_id, number: int, fresh: bool = False) -> str | None:
        """The run id of trial ``number`` of the parent's study, if logged (by any process, under any
        parent of the study): the copy :meth:`_one_run_per_trial` keeps. ``fresh`` asks the store even
        when this process knows an id (another process may have deleted that copy since)."""
        parent = self._parent(parent_run_id)
        study_name = parent.data.tags[STUDY_TAG]
        known = self._logged_trials.setdefault(study_name, {})
        if fresh or number not in known:
            copies = retry(self.client.search_runs, [parent.info.experiment_id],
                            self._trial_filter(study_name, number))
            if not copies:
                return None
            known[number] = min(run.info.run_id for run in copies)
        return known[number]

    @staticmethod
    def _trial_filter(study_name: str, number: int | None = None) -> str:
        """The search for the study's trial runs, or for trial ``number``'s."""
        runs = f"tags.`{KIND_TAG}` = 'trial' and tags.`{STUDY_TAG}` = {quote(study_name)}"
        return runs if number is None else f"{runs} and tags.`{TRIAL_TAG}` = {quote(str(number))}"

    def _parent(self, parent_run_id):
        if parent_run_id not in self._parents:
            self._parents[parent_run_id] = self.client.get_run(parent_run_id)
        return self._parents[parent_run_id]

    # ---- trials ------------------------------------------------------------------------------------
    def log_trial(self, parent_run_id: str, trial: TrialRecord, study_name: str) -> str:
        """One nested run for a finished trial (the driver's :class:`~automil.records.TrialRecord`);
        returns its id.

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
        if not trial.finished:
            raise ValueError(f"trial {trial.number} of study {study_name!r} is still "
                             f"{trial.state}: log it once it has finished")
        number = int(trial.number)
        logged = self._trial_run_id(parent_run_id, number)
        if logged is not None:
            return logged
        parent = self._parent(parent_run_id)
        attrs = dict(trial.attrs)
        state = trial.outcome
        metrics = _trial_metrics(trial, attrs)
        tags = {
            KIND_TAG: "trial", PARENT_TAG: parent_run_id, STUDY_TAG: study_name, TRIAL_TAG: str(number),
            STATE_TAG: state, "automil.version": automil.__version__,
            "automil.learner": parent.data.tags.get("automil.learner", ""),
            "automil.dataset": parent.data.tags.get("automil.dataset", ""),
            "automil.plugin": parent.data.tags.get("automil.plugin", ""),
            "automil.plugin_version": parent.data.tags.get("automil.plugin_version", ""),
        }
        for key in TRIAL_TAG_ATTRS:
            value = attrs.get(key)
            if value is not None and value is not False and value != "":
                tags[f"automil.{key}"] = clip_text(value, MAX_TAG_CHARS)
        start = millis(trial.start)
        end = millis(trial.end)
        run = retry(self.client.create_run, parent.info.experiment_id, start_time=start,
                     run_name=f"trial {number}", tags=tags)
        run_id = run.info.run_id
        params = {name: clip_text(value, MAX_PARAM_CHARS) for name, value in trial.params.items()}
        timestamp = end or int(time.time() * 1000)
        self._log_batch(run_id, metrics=[(key, value, timestamp, step) for key, value, step in metrics],
                        params=params)
        retry(self.client.set_terminated, run_id, status=RUN_STATUS.get(state, "FINISHED"), end_time=end)
        copies = self._search_all(parent.info.experiment_id, self._trial_filter(study_name, number))
        run_id = self._one_run_per_trial(copies)[0].info.run_id
        self._logged_trials[study_name][number] = run_id
        return run_id

    # ---- final results -----------------------------------------------------------------------------
    def end_study(self, parent_run_id: str) -> None:
        """Mark the parent run ``FINISHED`` again after a sweep that logged no result (the result was
        logged before, by this or another process, and :meth:`study_run` marked the run running)."""
        retry(self.client.set_terminated, parent_run_id, status="FINISHED")

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

    def trials(self, dataset: str) -> list[dict]:
        """Every trial run of ``dataset``'s experiment: ``parent`` (its study's run id), ``state`` (COMPLETE,
        PRUNED, FAIL or T/O) and ``metrics``."""
        return [{"parent": run.data.tags.get(PARENT_TAG), "state": run.data.tags.get(STATE_TAG, ""),
                 "metrics": dict(run.data.metrics)}
                for run in self._search_all(self.experiment_id(dataset), f"tags.`{KIND_TAG}` = 'trial'")]

    # ---- low level ---------------------------------------------------------------------------------
    def _search_all(self, experiment_id, filter_string) -> list:
        """Every active run of the experiment that matches, page by page."""
        runs, token = [], None
        while True:
            page = retry(self.client.search_runs, [experiment_id], filter_string, max_results=1000,
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
            batch_metrics, metrics = metrics[:BATCH_METRICS], metrics[BATCH_METRICS:]
            batch_entries, entries = entries[:BATCH_PARAMS_TAGS], entries[BATCH_PARAMS_TAGS:]
            retry(self.client.log_batch, run_id,
                   metrics=batch_metrics,
                   params=[e for e in batch_entries if isinstance(e, Param)],
                   tags=[e for e in batch_entries if isinstance(e, RunTag)])
            if not metrics and not entries:
                return



def _trial_metrics(trial: TrialRecord, attrs) -> list[tuple[str, float, int]]:
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
            values = [v for v in values if finite(v)]
            values = sum(values) / len(values) if values else None
        out.append((key, values, 0))
    out.append(("objective", trial.value, 0))
    if trial.start and trial.end:
        out.append(("trial_seconds", (trial.end - trial.start).total_seconds(), 0))
    return [(key, float(value), step) for key, value, step in out if finite(value)]



def _plugin_version(plugin: str) -> str:
    """The plugin's distribution version; a built-in plugin ships with automil, so automil's."""
    if not plugin:
        return ""
    from automil import plugins

    version = plugins.registry("learners").plugins.get(plugin, "")
    return automil.__version__ if version == "automil" else version
