"""The calibration figures through a real MLflow store: the run's metrics and reliability diagram, and
``automil report --calibration``."""

import numpy as np
import pytest
from mlflow import MlflowClient

from automil.cli.main import main
from automil.evaluation.calibrated import CalibrationBags
from automil.evaluation.calibration_figures import held_out_figures
from automil.evaluation.metrics import FoldScores
from automil.records import LearnerResult, Status, TrialRecord, TrialState
from automil.track import Tracker
from automil.tune.final.leaderboard import Evaluation, Refit, result_row
from automil.tune.options import TuneOptions

OPTIONS = TuneOptions(folds=2, repeats=1, protocol="nested", metric="balanced_accuracy", jobs=1)
SPEC = type("Spec", (), {"name": "a", "plugin": "p", "description": ""})()  # what a study run needs of a learner


def _row(learner="a", sets=True):
    """A learner's nested row over two outer splits, each calibrated on 100 generated out-of-fold scores (with
    ``sets``, its prediction sets on the same scores)."""
    rng = np.random.default_rng(8)
    y_cal = rng.integers(0, 2, 100)
    oof = 1.5 * (2 * y_cal - 1) + rng.normal(scale=1.5, size=100)
    splits = []
    for n in (30, 50):
        y = rng.integers(0, 2, n)
        test = 1.5 * (2 * y - 1) + rng.normal(scale=1.5, size=n)
        splits.append(held_out_figures(oof, y_cal, test, y, [0, 1], False,
                                       sets=CalibrationBags(oof, y_cal) if sets else None, set_scores=test))
    best = TrialRecord(0, TrialState.COMPLETE, 0.5, attrs={"estimator_params": {}})
    truth = np.array([0, 1, 0, 1])
    row = result_row("gen", OPTIONS, Evaluation(learner, "p", f"gen/{learner}", [best], best, outer_best=[best] * 2,
                                                nested=[FoldScores(accuracy=0.9, balanced_accuracy=0.9)] * 2,
                                                inner=[0.9, 0.8], fit_seconds=[1.0],
                                                calibration=splits, predictions={Refit.NESTED: [(truth, truth)] * 2}))
    row.status = Status.OK
    return row


def test_the_run_logs_the_figures_as_metrics_with_a_reliability_diagram_and_report_shows_them(
        tmp_path, mlflow_store, capsys):
    uri = mlflow_store(tmp_path)
    tracker = Tracker(uri)
    row = _row()
    run_id = tracker.study_run("gen/a", "gen", SPEC)
    tracker.log_result(run_id, row)
    client = MlflowClient(uri)
    run = client.get_run(run_id)
    assert run.data.metrics["ece"] == pytest.approx(row.calibration.ece)
    assert run.data.metrics["abstention_0.9"] == pytest.approx(row.calibration.abstention["0.9"])
    assert run.data.metrics["coverage_se_0.9"] == pytest.approx(row.calibration.standard_error(0.9))
    assert "figures/reliability.png" in [f.path for f in client.list_artifacts(run_id, "figures")]

    assert main(["report", "--calibration", "--tracking-uri", uri]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("| a "))
    assert f"{100 * row.calibration.abstention['0.9']:.1f}%" in line
    assert f"{row.calibration.ece:.3f} ({row.calibration.raw_ece:.3f})" in line


def test_report_shows_a_row_without_prediction_sets_with_its_probabilities_and_no_coverage(
        tmp_path, mlflow_store, capsys):
    uri = mlflow_store(tmp_path)
    tracker = Tracker(uri)
    row = _row("b", sets=False)
    spec = type("Spec", (), {"name": "b", "plugin": "p", "description": ""})()
    run_id = tracker.study_run("gen/b", "gen", spec)
    tracker.log_result(run_id, row)
    metrics = MlflowClient(uri).get_run(run_id).data.metrics
    assert "ece" in metrics and not [key for key in metrics if key.startswith(("coverage", "abstention"))]
    assert main(["report", "--calibration", "--tracking-uri", uri]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| b "))
    assert f"{row.calibration.ece:.3f} ({row.calibration.raw_ece:.3f})" in line and "| - / - / - | - |" in line


def test_report_calibration_on_a_store_without_figures_says_so_in_one_line(tmp_path, mlflow_store, capsys):
    uri = mlflow_store(tmp_path)
    tracker = Tracker(uri)
    row = LearnerResult(dataset="gen", learner="a", status=Status.OK, protocol="tuned", metric="balanced_accuracy")
    tracker.log_result(tracker.study_run("gen/a", "gen", SPEC), row)
    assert main(["report", "--calibration", "--tracking-uri", uri]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no study in the tracking store has calibration figures" in err
