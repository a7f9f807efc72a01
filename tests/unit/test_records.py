"""The records between the layers: a result row keeps today's JSON keys, statuses are plain strings."""

import json

from automil.records import Headline, LearnerResult, ModelRecord, Status, TrialCounts, TrialRecord, TrialState

# The keys of a full leaderboard row, in the order ``automil tune --json`` has always written them.
ROW_KEYS = ["dataset", "learner", "plugin", "study", "protocol", "metric", "seed", "folds", "trials",
            "trials_complete", "trials_pruned", "trials_failed", "trials_timed_out", "tuning_score", "best_trial",
            "best_params", "nested_accuracy", "nested_accuracy_std", "nested_balanced_accuracy",
            "nested_balanced_accuracy_std", "nested_roc_auc", "nested_roc_auc_std", "repeated_accuracy",
            "repeated_accuracy_std", "repeated_balanced_accuracy", "repeated_balanced_accuracy_std",
            "repeated_roc_auc", "repeated_roc_auc_std", "accuracy", "accuracy_std", "balanced_accuracy",
            "balanced_accuracy_std", "roc_auc", "roc_auc_std", "repeats", "headline", "fit_seconds", "budget_seconds",
            "one_class", "error", "trials_stopped"]
# Added with the chosen model: the outer splits tuned and their inner and outer scores, the logged model, the
# choice and its registry version.
CHOICE_KEYS = ["tuned_splits", "outer_splits", "model_uri", "selected", "registered_model"]


def test_a_row_without_predictions_has_the_leaderboard_keys_and_a_plain_status():
    row = LearnerResult(dataset="fox", learner="sil", status=Status.NO_RESULT).to_dict()
    assert list(row) == ROW_KEYS + CHOICE_KEYS + ["status"]
    assert row["selected"] is False
    assert json.loads(json.dumps(row))["status"] == "no result" and type(row["status"]) is str


def test_a_row_with_predictions_adds_classes_and_confusion_matrix_before_the_status():
    row = LearnerResult(learner="sil", headline=Headline(classes=[0, 1], confusion_matrix=[[3, 1], [0, 4]]),
                        status="ok").to_dict()
    assert list(row) == ROW_KEYS + ["classes", "confusion_matrix", *CHOICE_KEYS, "status"]


def test_a_skipped_row_has_only_its_eight_keys():
    row = LearnerResult(dataset="sival", learner="pdmisvm", plugin="pdmisvm", status="skipped", error="binary only",
                        protocol="nested", metric="accuracy", counts=TrialCounts(trials=0)).to_dict()
    assert row == {"dataset": "sival", "learner": "pdmisvm", "plugin": "pdmisvm", "status": "skipped",
                   "error": "binary only", "protocol": "nested", "metric": "accuracy", "trials": 0}


def test_a_stored_row_reads_back_equal_and_unknown_keys_are_named():
    row = LearnerResult(learner="sil", headline=Headline(accuracy=0.8, kind="nested"), status="T/O",
                        model=ModelRecord(uri="models:/m-1")).to_dict()
    assert row["accuracy"] == 0.8 and row["headline"] == "nested" and row["model_uri"] == "models:/m-1"
    assert LearnerResult.from_dict(row).to_dict() == row
    try:
        LearnerResult.from_dict({**row, "acuracy": 1.0})
    except ValueError as error:
        assert "acuracy" in str(error)
    else:
        raise AssertionError("an unknown key was accepted")


def test_status_values_are_the_strings_json_and_reports_have_always_shown():
    assert [s.value for s in Status] == ["ok", "partial", "T/O", "failed", "no result", "no trials", "too slow",
                                         "screened", "skipped"]
    assert f"{Status.TIMED_OUT}" == "T/O" and Status("no trials") is Status.NO_TRIALS
    assert [s for s in Status if s.has_figure] == [Status.OK, Status.PARTIAL]


def test_trial_states_are_named_as_optuna_names_them():
    from optuna.trial import TrialState as OptunaState

    assert {s.value for s in TrialState} <= {s.name for s in OptunaState}
    assert [s for s in TrialState if s.finished] == [TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL]
    assert TrialRecord(0, "COMPLETE").state is TrialState.COMPLETE  # read back from a stored string


def test_a_trial_killed_at_its_time_out_shows_T_O_and_counts_as_finished():
    trial = TrialRecord(3, TrialState.FAIL, attrs={"timed_out": True})
    assert trial.outcome == "T/O" and trial.finished
    running = TrialRecord(4, TrialState.RUNNING)
    assert running.outcome is TrialState.RUNNING and not running.finished


def test_an_ensemble_row_holds_typed_members_and_writes_them_as_today():
    from automil.records import Member

    row = LearnerResult(dataset="fox", learner="ensemble", members=[Member("mi-svm", 0.75), Member("nsk", 0.25)])
    written = json.loads(json.dumps(row.to_dict()))
    assert written["members"] == [{"learner": "mi-svm", "weight": 0.75}, {"learner": "nsk", "weight": 0.25}]
    back = LearnerResult.from_dict(written)
    assert back.members == row.members and all(isinstance(m, Member) for m in back.members)


def test_a_pareto_front_holds_typed_points_and_reads_back_as_written():
    from automil.records import ParetoPoint, Tuning

    front = [ParetoPoint(4, {"C": 10.0}, {"balanced_accuracy": 0.9, "fit_seconds": 2.5}),
             ParetoPoint(1, None, {"balanced_accuracy": 0.8, "fit_seconds": 0.1})]
    row = LearnerResult(dataset="fox", learner="nsk", tuning=Tuning(score=0.9, best_trial=4, pareto_front=front))
    written = json.loads(json.dumps(row.to_dict()))
    assert written["pareto_front"][0] == {"trial": 4, "params": {"C": 10.0},
                                          "values": {"balanced_accuracy": 0.9, "fit_seconds": 2.5}}
    back = LearnerResult.from_dict(written)
    assert back.tuning.pareto_front == front and all(isinstance(p, ParetoPoint) for p in back.tuning.pareto_front)
    assert "pareto_front" not in LearnerResult(dataset="fox", learner="nsk").to_dict()  # one objective: no key
