"""One parent run per study and one run per trial, however many processes log the study at once: the
parents opened at the same moment merge into the oldest, copies of a trial's run into the lowest id."""

from __future__ import annotations

from mlflow.entities import RunStatus

from automil.track.store.mlflow_store import quote, retry
from automil.track.store.names import KIND_TAG, PARENT_TAG, STUDY_KIND, STUDY_TAG, TRIAL_KIND, TRIAL_TAG

__all__ = ["StudyRuns"]

# MLflow's words for a write to a deleted run; another worker merging a study's parents deletes runs.
RUN_DELETED = "must be in the 'active' state"
MERGE_ATTEMPTS = 5
RUNNING = RunStatus.to_string(RunStatus.RUNNING)  # MLflow's status of a run being written


class StudyRuns:
    """The parent and trial runs of the studies one process logs, found in ``store`` and remembered.

    Parameters
    ----------
    store : automil.track.store.mlflow_store.Store
    """

    def __init__(self, store):
        self.store = store
        self._parents: dict[str, object] = {}  # parent run id -> its Run (experiment id, tags)
        self._trials: dict[str, dict[int, str]] = {}  # study name -> {trial number: run id}

    def open(self, experiment_id: str, study_name: str, run_name: str, tags: dict) -> str:
        """The id of the study's one parent run, created on first use, given ``tags`` and marked running.
        When processes create it at the same moment, the older run is kept (see :meth:`merge_parents`)."""
        from mlflow.exceptions import MlflowException

        for attempt in range(MERGE_ATTEMPTS):
            try:
                run = self._open(experiment_id, study_name, run_name, tags)
                break
            except MlflowException as error:
                # a third worker's merge deleted the run this one kept (or a trial copy it re-tagged):
                # look again, and the newest search says which parent survives
                if RUN_DELETED not in str(error) or attempt == MERGE_ATTEMPTS - 1:
                    raise
        self._parents[run.info.run_id] = run
        return run.info.run_id

    def _open(self, experiment_id: str, study_name: str, run_name: str, tags: dict):
        parents = self.store.search(experiment_id, parent_filter(study_name))
        if not parents:
            retry(self.store.client.create_run, experiment_id, run_name=run_name, tags=tags)
            # another process may have created one meanwhile: look again, and keep the oldest
            parents = self.store.search(experiment_id, parent_filter(study_name))
        run = self.merge_parents(experiment_id, parents, study_name)
        self.store.log_batch(run.info.run_id, tags=tags)
        if run.info.status != RUNNING:
            retry(self.store.client.update_run, run.info.run_id, status=RUNNING)
        return run

    def find(self, experiment_id: str, study_name: str) -> str | None:
        """The id of the study's one parent run if the store has one (merged as :meth:`open` merges), left
        in its state: a replay of kept trials must not reopen a study whose result is logged."""
        parents = self.store.search(experiment_id, parent_filter(study_name))
        if not parents:
            return None
        run = self.merge_parents(experiment_id, parents, study_name)
        self._parents[run.info.run_id] = run
        return run.info.run_id

    def merge_parents(self, experiment_id: str, parents: list, study_name: str):
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
                retry(self.store.client.delete_run, other.info.run_id)
        trial_runs = self.one_run_per_trial(self.store.search(experiment_id, trial_filter(study_name)))
        for run in trial_runs:
            if run.data.tags.get(PARENT_TAG) != keep.info.run_id:
                retry(self.store.client.set_tag, run.info.run_id, PARENT_TAG, keep.info.run_id)
        # what is logged so far, so that the final sweep asks the store only about trials logged since
        self._trials[study_name] = {int(run.data.tags[TRIAL_TAG]): run.info.run_id for run in trial_runs}
        return keep

    def one_run_per_trial(self, trial_runs: list) -> list:
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
            elif run.info.status != RUNNING:
                retry(self.store.client.delete_run, run.info.run_id)
        return list(kept.values())

    def parent(self, parent_run_id: str):
        """The parent run (its experiment id and tags as they were when this process opened it)."""
        if parent_run_id not in self._parents:
            self._parents[parent_run_id] = self.store.client.get_run(parent_run_id)
        return self._parents[parent_run_id]

    def trial_run_id(self, parent_run_id: str, number: int, fresh: bool = False) -> str | None:
        """The run id of trial ``number`` of the parent's study, if logged (by any process, under any
        parent of the study): the copy :meth:`one_run_per_trial` keeps. ``fresh`` asks the store even
        when this process knows an id (another process may have deleted that copy since)."""
        parent = self.parent(parent_run_id)
        study_name = parent.data.tags[STUDY_TAG]
        known = self._trials.setdefault(study_name, {})
        if fresh or number not in known:
            copies = self.store.search(parent.info.experiment_id, trial_filter(study_name, number))
            if not copies:
                return None
            known[number] = min(run.info.run_id for run in copies)
        return known[number]

    def settle_trial(self, parent_run_id: str, study_name: str, number: int) -> str:
        """After logging trial ``number``: the run id kept of all its copies in the store (see
        :meth:`one_run_per_trial`), remembered."""
        parent = self.parent(parent_run_id)
        copies = self.store.search(parent.info.experiment_id, trial_filter(study_name, number))
        run_id = self.one_run_per_trial(copies)[0].info.run_id
        self._trials.setdefault(study_name, {})[number] = run_id
        return run_id


def parent_filter(study_name: str) -> str:
    """The search for the study's parent runs."""
    return f"tags.`{STUDY_TAG}` = {quote(study_name)} and tags.`{KIND_TAG}` = '{STUDY_KIND}'"


def trial_filter(study_name: str, number: int | None = None) -> str:
    """The search for the study's trial runs, or for trial ``number``'s."""
    runs = f"tags.`{KIND_TAG}` = '{TRIAL_KIND}' and tags.`{STUDY_TAG}` = {quote(study_name)}"
    return runs if number is None else f"{runs} and tags.`{TRIAL_TAG}` = {quote(str(number))}"
