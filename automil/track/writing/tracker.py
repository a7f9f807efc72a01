"""Everything MLflow, and only here: studies, trials and final results as runs in a tracking store.

Layout: one MLflow experiment per dataset, one parent run per learner-dataset study, one nested run per
Optuna trial. The driver calls a :class:`Tracker`; learners never log anything themselves. Every call
names its run explicitly (``MlflowClient`` with run ids, never the fluent run stack), so several studies
and processes can log to one store at the same time.
"""

from __future__ import annotations

import automil
from automil.evaluation.folds_file import RunFolds
from automil.records import LearnerResult, StudyRecord, TrialRecord
from automil.track.reading.stored_studies import StoredStudy, read_studies
from automil.track.store.mlflow_store import Store, retry
from automil.track.store.names import (
    DATASET_TAG,
    FOLDS,
    KIND_TAG,
    LEARNER_TAG,
    NOTE_TAG,
    PLUGIN_TAG,
    PLUGIN_VERSION_TAG,
    STUDY_KIND,
    STUDY_TAG,
    VERSION_TAG,
)
from automil.track.store.values import MAX_TAG_CHARS, clip_text
from automil.track.writing import comparison
from automil.track.writing.registry import register_model
from automil.track.writing.result_runs import ResultLogging
from automil.track.writing.runs import StudyRuns
from automil.track.writing.trial_runs import TrialLogging

__all__ = ["Tracker"]


class Tracker:
    """Logs automil studies to one MLflow tracking store (the driver's ``Tracking``).

    It holds the :class:`~automil.track.store.mlflow_store.Store` and hands it, with the study runs it keeps, to the
    collaborators that log trials and results; the comparison and the reading back take the store alone.

    Parameters
    ----------
    tracking_uri, create
        Which store, and whether a missing sqlite file may be created: as for
        :class:`~automil.track.store.mlflow_store.Store`.

    Attributes
    ----------
    tracking_uri : str
    store : automil.track.store.mlflow_store.Store
    runs : automil.track.writing.runs.StudyRuns
        The parent run of each study and the run of each trial, as this process found or made them.
    """

    def __init__(self, tracking_uri: str | None = None, create: bool = True):
        self.store = Store(tracking_uri, create)
        self.tracking_uri = self.store.tracking_uri
        self.runs = StudyRuns(self.store)
        self.trial_logging = TrialLogging(self.store, self.runs)
        self.result_logging = ResultLogging(self.store, self.runs)

    def experiment_id(self, dataset: str) -> str:
        """The experiment of ``dataset`` (named after it), created on first use."""
        return self.store.experiment_id(dataset)

    def study_run(self, study_name: str, dataset: str, learner_spec, tags: dict | None = None) -> str:
        """The parent run of one learner-dataset study, created on first use and reused on resume.

        The experiment is named after ``dataset``; the parent run is found by its tag ``automil.study``,
        so calling this again (a resumed study, another worker process) returns the same run id. When
        two processes create it at the same moment, the older run is kept (see
        :meth:`automil.track.writing.runs.StudyRuns.merge_parents`). The run is (again) marked running until
        :meth:`log_result`.

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
        plugin = getattr(learner_spec, "plugin", "") or ""
        all_tags = {
            KIND_TAG: STUDY_KIND, STUDY_TAG: study_name, DATASET_TAG: dataset, LEARNER_TAG: learner_spec.name,
            PLUGIN_TAG: plugin, PLUGIN_VERSION_TAG: _plugin_version(plugin), VERSION_TAG: automil.__version__,
            NOTE_TAG: f"{learner_spec.name} on {dataset}: {getattr(learner_spec, 'description', '')}".strip(),
            **{key: clip_text(value, MAX_TAG_CHARS) for key, value in (tags or {}).items()},
        }
        return self.runs.open(self.experiment_id(dataset), study_name, learner_spec.name, all_tags)

    def log_trial(self, parent_run_id: str, trial: TrialRecord, study_name: str) -> str:
        """One nested run for a finished trial, logged once per trial number; its run id (see
        :meth:`automil.track.writing.trial_runs.TrialLogging.log`)."""
        return self.trial_logging.log(parent_run_id, trial, study_name)

    def log_folds(self, parent_run_id: str, folds: RunFolds) -> None:
        """``folds.json`` on the parent run: the folds its result is scored on, for ``--folds-file`` (from
        the run's folds, or the text a kept call replays, :class:`automil.track.outage.backlog.FoldsText`)."""
        retry(self.store.client.log_text, parent_run_id, folds.to_json(), FOLDS)

    def log_result(self, parent_run_id: str, result: LearnerResult, model=None, bags=None,
                   study: StudyRecord | None = None) -> str | None:
        """The study's final result (and its fitted best model) on its parent run, which is then marked
        finished; the logged model's URI when ``model`` is given (see
        :meth:`automil.track.writing.result_runs.ResultLogging.log`)."""
        return self.result_logging.log(parent_run_id, result, model, bags, study)

    def register_model(self, dataset: str, model_uri: str) -> str:
        """Register the logged model ``model_uri`` as the new version of ``automil-<dataset>`` in the
        model registry; returns ``models:/automil-<dataset>/<version>``."""
        return register_model(self.store.client, dataset, model_uri)

    def refresh_comparison(self, dataset: str, chosen: LearnerResult | None = None) -> None:
        """The rank of every learner of ``dataset``, the leaderboard in its experiment's description and
        the comparison chart, from the studies in the store (see :mod:`automil.track.writing.comparison`);
        ``chosen`` is the row of the learner whose model the last tune registered."""
        comparison.refresh(self.store, dataset, chosen)

    def end_study(self, parent_run_id: str) -> None:
        """Mark the parent run ``FINISHED`` again after a sweep that logged no result (the result was
        logged before, by this or another process, and :meth:`study_run` marked the run running)."""
        self.store.terminate(parent_run_id)

    def find_study_run(self, study_name: str, dataset: str) -> str | None:
        """The id of the study's parent run if the store has one, as it is (not marked running)."""
        return self.runs.find(self.experiment_id(dataset), study_name)

    def flush(self) -> None:
        """Nothing to do: a Tracker keeps nothing back, a call the server misses raises (see
        :class:`automil.track.outage.tolerant.OutageTolerant` for the tracker that keeps it)."""

    def backlog(self) -> None:
        """Always ``None``: see :meth:`flush`."""
        return None

    def studies(self, datasets=None) -> list[StoredStudy]:
        """Every study (parent run) in the store, optionally only of some datasets."""
        return read_studies(self.store, datasets)


def _plugin_version(plugin: str) -> str:
    """The plugin's distribution version; a built-in plugin ships with automil, so automil's."""
    if not plugin:
        return ""
    from automil import plugins

    version = plugins.registry("learners").plugins.get(plugin, "")
    return automil.__version__ if version == "automil" else version
