"""A backlog file of kept calls replayed into a real MLflow store: every call of the tracker is made by the one
mechanism that kept it (its name and arguments, the parent run found by its study), each logged once."""

import shutil
from datetime import UTC, datetime

from mlflow import MlflowClient

from automil.records import Headline, LearnerResult, Status, TrialRecord, TrialState
from automil.track.outage.backlog import BacklogFile, FoldsText, Kept, Learner, Study
from automil.track.outage.tolerant import replay
from automil.track.store.names import FOLDS

STUDY = Study("bags/centroid", "bags", Learner("centroid", "testlearners", "nearest centroid"),
              {"automil.protocol": "tuned"})
TRIAL = TrialRecord(0, TrialState.COMPLETE, 0.75, {"shrink": 0.5}, {"fold_accuracy": [0.5, 1.0]},
                    datetime(2026, 12, 3, 2, 0, tzinfo=UTC), datetime(2026, 12, 3, 2, 1, tzinfo=UTC))
RESULT = LearnerResult(dataset="bags", learner="centroid", study="bags/centroid", protocol="tuned",
                       metric="balanced_accuracy", headline=Headline(accuracy=0.75, balanced_accuracy=0.75),
                       status=Status.OK)
FOLDS_JSON = '{"format": "automil-folds", "folds": [["b0"], ["b1"]]}'


def test_a_replay_logs_every_kept_call_once_and_counts_them(tmp_path, mlflow_store):
    store = mlflow_store(tmp_path)
    file = BacklogFile(tmp_path / "host-1.jsonl", store)
    for kept in [Kept("study_run", STUDY), Kept("log_trial", STUDY, {"trial": TRIAL, "study_name": STUDY.name}),
                 Kept("log_folds", STUDY, {"folds": FoldsText(FOLDS_JSON)}),
                 Kept("log_result", STUDY, {"result": RESULT, "model": object(), "bags": None}),
                 Kept("refresh_comparison", None, {"dataset": "bags", "chosen": RESULT})]:
        file.append(kept)
    again = shutil.copy(file.path, tmp_path / "again.jsonl")

    done = replay(file.path)
    assert (done.logged, done.left, done.dropped) == (5, 0, []) and not file.path.exists()
    client = MlflowClient(store)
    experiment = client.get_experiment_by_name("bags")
    runs = client.search_runs([experiment.experiment_id])
    (study_run,) = [r for r in runs if r.data.tags.get("automil.kind") == "study"]
    (trial_run,) = [r for r in runs if r.data.tags.get("automil.kind") == "trial"]
    assert trial_run.data.params == {"shrink": "0.5"}
    assert trial_run.data.tags["mlflow.parentRunId"] == study_run.info.run_id
    assert study_run.data.metrics["balanced_accuracy"] == 0.75 and study_run.info.status == "FINISHED"
    assert open(client.download_artifacts(study_run.info.run_id, FOLDS, str(tmp_path))).read() == FOLDS_JSON

    assert replay(again).left == 0  # the same calls again: nothing logged twice
    assert len(client.search_runs([experiment.experiment_id])) == len(runs)
