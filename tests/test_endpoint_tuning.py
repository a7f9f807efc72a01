"""Survival and regression runs end to end: a real ``tune()`` (journal storage, worker processes, an MLflow
sqlite store) on the test plugin's generated sets, whose labels say their task."""

import functools
import json

import mlflow
import numpy as np
import optuna
import pytest
from driver_support import load_in_process

import automil
from automil.endpoints import TASK_METRICS, regression_labels, survival_labels
from automil.records import PROCEDURE, Status, TrialAttr
from automil.tune.backend.optuna_storage import open_storage
from automil.tune.driver import tune
from automil.tune.options import TuneOptions

# one learner that learns, one that gives every bag the same prediction, one that serves classification only
LEARNERS = ["mean-outcome", "constant-outcome", "centroid"]


def _run(tmp_path, dataset: str, tracking=None) -> dict:
    options = TuneOptions(n_trials=3, timeout=None, folds=3, repeats=1, jobs=1, protocol="nested",
                          warm_start=False, storage=f"journal:{tmp_path / 'studies.journal'}")
    return {row.learner: row for row in tune(dataset, LEARNERS, options, tracking=tracking)}


def _check_rows(rows: dict, task: str, tmp_path) -> None:
    """What every task's run must show: its metrics in the rows, the skip, the constant model, the procedure."""
    metrics = TASK_METRICS[task]
    assert {row.metric for row in rows.values()} == {metrics[0]}  # the task's default, decided on the labels
    skipped = rows["centroid"]
    assert (skipped.status, skipped.error) == (Status.SKIPPED, f"does not serve {task}")

    learned = rows["mean-outcome"]
    row = learned.to_dict()
    assert learned.status == Status.OK
    assert all(row[f"nested_{m}"] is not None and row[m] == row[f"nested_{m}"] for m in metrics)
    assert not {"accuracy", "nested_balanced_accuracy", "roc_auc"} & set(row)  # classification's keys stay out
    splits = learned.nested.outer_splits
    for m in metrics:  # the headline is the mean over the outer folds of each fold's own figure
        assert row[m] == pytest.approx(np.mean([getattr(split, m) for split in splits]))
    low, high = learned.headline.interval
    assert 0.0 < low < row[metrics[0]] < high  # above chance (0.5 or 0) by its own uncertainty
    storage = open_storage(f"journal:{tmp_path / 'studies.journal'}")
    trial = optuna.load_study(study_name=learned.study, storage=storage).best_trial
    assert trial.user_attrs[TrialAttr.TASK] == task
    for m in metrics:
        assert len(trial.user_attrs[f"fold_{m}"]) == 3
        assert trial.user_attrs[m] == pytest.approx(np.mean(trial.user_attrs[f"fold_{m}"]))
    assert trial.value == pytest.approx(trial.user_attrs[metrics[0]])

    constant = rows["constant-outcome"]
    assert constant.status == Status.NO_RESULT
    assert constant.error.startswith("3 of 3 trials predicted the same value for every bag they scored")
    constant_trials = optuna.load_study(study_name=constant.study, storage=storage).trials
    assert all(t.user_attrs[TrialAttr.ONE_CLASS] and t.state == optuna.trial.TrialState.PRUNED
               for t in constant_trials)

    procedure = rows[PROCEDURE]
    assert procedure.status == Status.OK and procedure.choices == ["mean-outcome"] * 3
    for m in metrics:  # each outer split scores the row chosen there
        assert getattr(procedure.headline, m) == pytest.approx(getattr(learned.headline, m))


def test_survival_run_scores_every_fold_by_concordance_and_brier_and_logs_the_task_metrics(
        tmp_path, fresh_plugins, mlflow_store, capsys):
    from automil.cli.main import main
    from automil.track import Tracker

    load_in_process(fresh_plugins, tmp_path / "records")
    uri = mlflow_store(tmp_path)
    rows = _run(tmp_path, "survival-bags", functools.partial(Tracker, uri))
    _check_rows(rows, "survival", tmp_path)
    assert 0.0 < rows["mean-outcome"].headline.integrated_brier < 0.25  # the Kaplan-Meier curves' is about 0.2

    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("survival-bags")
    runs = client.search_runs([experiment.experiment_id])
    study = {r.data.tags["automil.learner"]: r for r in runs if r.data.tags.get("automil.kind") == "study"}
    for learner in ("mean-outcome", PROCEDURE):
        logged = study[learner].data.metrics
        assert {"concordance", "concordance_nested", "uno_concordance_nested", "integrated_brier_nested"} <= set(logged)
        assert "balanced_accuracy" not in logged
        assert logged["concordance"] == pytest.approx(rows[learner].headline.concordance)
    assert "automil.figure_errors" not in study["mean-outcome"].data.tags
    held_out = np.array(rows["mean-outcome"].headline.held_out_risk)  # [bag, risk, cut] of every outer fold's bag
    assert sorted(held_out[:, 0].astype(int).tolist()) == list(range(80))
    assert len(np.unique(held_out[:, 2])) == 3  # each outer fold split at its own refit's training median
    figures = {a.path for a in client.list_artifacts(study["mean-outcome"].info.run_id, "figures")}
    assert "figures/kaplan_meier.png" in figures
    assert study["mean-outcome"].data.metrics["rank"] == 1  # ranked by the concordance
    description = experiment.tags["mlflow.note.content"]
    assert "best **mean-outcome**, Harrell's concordance" in description
    assert "| rank | learner | C | IBS | repeated-CV C |" in description
    trial_runs = [r for r in runs if r.data.tags.get("automil.kind") == "trial"
                  and r.data.tags["automil.learner"] == "mean-outcome"]
    assert trial_runs and all({"concordance", "fold_concordance", "fold_integrated_brier"} <= set(r.data.metrics)
                              for r in trial_runs)

    chosen = rows["mean-outcome"]
    assert chosen.model.selected and chosen.model.registered
    capsys.readouterr()
    written = tmp_path / "predictions.json"
    assert main(["predict", chosen.model.uri, "--dataset", "survival-bags", "--tracking-uri", uri,
                 "--json", str(written)]) == 0
    out = capsys.readouterr().out
    bags = automil.get_dataset("survival-bags").load()
    predictions = json.loads(written.read_text())
    assert [set(p) for p in predictions] == [{"bag", "risk", "truth"}] * bags.n_bags
    assert [p["truth"] for p in predictions] == [{"event": bool(e), "time": float(t)} for e, t in bags.y]
    risks = np.array([p["risk"] for p in predictions])
    assert len(np.unique(risks)) > 1
    from sksurv.metrics import concordance_index_censored

    harrell = concordance_index_censored(bags.y["event"], bags.y["time"], risks)[0]
    assert f"C {harrell:.3f}" in out  # the printed figure is scikit-survival's of the printed risks


def test_regression_run_scores_r2_rho_and_errors_and_prints_their_columns(tmp_path, fresh_plugins, capsys):
    from automil.cli.leaderboard_table import print_rows

    load_in_process(fresh_plugins, tmp_path / "records")
    rows = _run(tmp_path, "regression-bags")
    _check_rows(rows, "regression", tmp_path)
    learned = rows["mean-outcome"].headline
    assert learned.rmse >= learned.mae > 0
    print_rows(list(rows.values()), verbose=False)
    header = capsys.readouterr().out.splitlines()[0].split()
    assert header[:9] == ["learner", "R2", "(nested)", "rho", "(nested)", "MAE", "(nested)", "RMSE", "(nested)"]


def _bags(y):
    rng = np.random.default_rng(0)
    return automil.Bags.from_list([rng.standard_normal((3, 2)) for _ in y], y)


def test_the_metric_follows_the_labels_task_and_a_metric_of_another_task_is_an_error_naming_the_allowed():
    survival = _bags(survival_labels(np.arange(1.0, 13.0), np.arange(12) % 2))
    regression = _bags(regression_labels(np.linspace(0.0, 1.0, 12)))
    assert TuneOptions(folds=3).for_data(survival).metric == "concordance"
    assert TuneOptions(folds=3).for_data(regression).metric == "r2"
    assert TuneOptions(folds=3, metric="uno_concordance").for_data(survival).metric == "uno_concordance"
    with pytest.raises(ValueError, match="^--metric balanced_accuracy is not a metric of survival labels: give one "
                                         "of concordance, uno_concordance$"):
        TuneOptions(folds=3, metric="balanced_accuracy").for_data(survival)
    with pytest.raises(ValueError, match="^--objective concordance is not a metric of regression labels: give one "
                                         "of r2, spearman$"):
        TuneOptions(folds=3, objectives=("concordance", "fit_seconds")).for_data(regression)


def test_a_warm_start_never_takes_a_head_of_another_task(tmp_path, fresh_plugins):
    """The same learner tuned for survival on one dataset does not warm-start its regression study on
    another: the heads' parameters are different models' (here: a Cox model's penalty and a ridge's)."""
    load_in_process(fresh_plugins, tmp_path / "records")
    storage = f"journal:{tmp_path / 'studies.journal'}"
    for dataset in ("survival-bags", "regression-bags"):
        tune(dataset, ["mean-outcome"], TuneOptions(n_trials=2, timeout=None, folds=3, repeats=1, jobs=1,
                                                    protocol="tuned", storage=storage))
    study = optuna.load_study(study_name="regression-bags/mean-outcome", storage=open_storage(storage))
    assert study.user_attrs["warm_start"] == {"source": None}
