"""The backlog file of kept MLflow calls: plain JSON lines that read back as the records that were kept."""

import json
from datetime import UTC, datetime

import pytest

from automil.records import Headline, LearnerResult, Status, TrialRecord, TrialState, Tuning
from automil.track.outage.backlog import BacklogFile, FoldsText, Kept, Learner, Study

STUDY = Study("bags/centroid", "bags", Learner("centroid", "testlearners", "nearest centroid"),
              {"automil.protocol": "tuned"})
TRIAL = TrialRecord(3, TrialState.COMPLETE, 0.75, {"shrink": 0.5}, {"fold_accuracy": [0.5, 1.0], "error": None},
                    datetime(2026, 12, 3, 2, 0, tzinfo=UTC), datetime(2026, 12, 3, 2, 1, tzinfo=UTC),
                    queued=True, values=(0.75, 0.1))
RESULT = LearnerResult(dataset="bags", learner="centroid", study="bags/centroid",
                       headline=Headline(balanced_accuracy=0.8), tuning=Tuning(best_params={"shrink": 0.5}),
                       status=Status.OK)


def test_kept_calls_read_back_from_the_file_as_they_were_kept_in_order(tmp_path):
    file = BacklogFile(tmp_path / "host-1.jsonl", "http://127.0.0.1:5000")
    kept = [Kept("study_run", STUDY), Kept("log_trial", STUDY, {"trial": TRIAL, "study_name": STUDY.name}),
            Kept("log_result", STUDY, {"result": RESULT, "model": object(), "bags": None}),
            Kept("refresh_comparison", None, {"dataset": "bags", "chosen": RESULT}),
            Kept("log_folds", STUDY, {"folds": FoldsText('{"format": "automil-folds"}')})]
    for call in kept:
        file.append(call)
    read, calls = BacklogFile.read(file.path)
    assert read.tracking_uri == "http://127.0.0.1:5000"
    assert [c.call for c in calls] == [c.call for c in kept]
    assert calls[1].args == {"trial": TRIAL, "study_name": "bags/centroid"} and calls[1].study == STUDY
    assert calls[2].args == {"result": RESULT, "bags": None}  # a model is never written: the replay goes without
    assert calls[3].study is None and calls[3].args == {"dataset": "bags", "chosen": RESULT}
    assert calls[4].args["folds"].to_json() == '{"format": "automil-folds"}' and calls[4].study == STUDY
    assert calls[1].describe() == "log_trial of trial 3 of study bags/centroid"
    assert all(json.loads(line) for line in file.path.read_text().splitlines())  # plain JSON, line by line


def test_rewriting_keeps_only_what_is_left_and_removes_an_empty_file(tmp_path):
    file = BacklogFile(tmp_path / "host-1.jsonl", "http://127.0.0.1:5000")
    file.append(Kept("study_run", STUDY))
    file.rewrite([Kept("end_study", STUDY)])
    assert [c.call for c in BacklogFile.read(file.path)[1]] == ["end_study"]
    file.rewrite([])
    assert not file.path.exists()


def test_a_file_that_is_not_a_backlog_is_refused_by_name(tmp_path):
    other = tmp_path / "notes.jsonl"
    other.write_text('{"a": 1}\n')
    with pytest.raises(ValueError, match="not an automil MLflow backlog file"):
        BacklogFile.read(other)
