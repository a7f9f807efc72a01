"""`automil tune` with two objectives end to end: the real CLI, a journal storage, a sqlite MLflow store and
the test plugin's fast learners."""

import json
import subprocess
import sys

import numpy as np
import optuna
import pytest
from driver_support import load_in_process, plugin_env, plugin_site
from mlflow import MlflowClient

from automil.tune.backend.optuna_storage import open_storage

OBJECTIVES = ["--objective", "balanced_accuracy", "--objective", "fit_seconds"]


def automil_tune(tmp_path, *args):
    command = [sys.executable, "-m", "automil.cli", "tune", "--dataset", "test-bags", "--learner", "centroid",
               "--learner", "plain", "--storage", f"journal:{tmp_path / 'studies.journal'}", "--n-trials", "4",
               "--folds", "3", "--protocol", "tuned", "--repeats", "1", "--timeout", "none", "--jobs", "1", *args]
    return subprocess.run(command, cwd=tmp_path, env=plugin_env(plugin_site(), tmp_path / "records"),
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def pareto_run(tmp_path_factory, mlflow_store):
    tmp_path = tmp_path_factory.mktemp("pareto")
    uri = mlflow_store(tmp_path)
    done = automil_tune(tmp_path, *OBJECTIVES, "--tracking-uri", uri, "--json", "out.json")
    assert done.returncode == 0, done.stderr
    rows = {row["learner"]: row for row in json.loads((tmp_path / "out.json").read_text())}
    return tmp_path, uri, rows, done.stdout


def _dominates(a, b):  # (balanced accuracy: higher, fit seconds: lower)
    return a[0] >= b[0] and a[1] <= b[1] and (a[0] > b[0] or a[1] < b[1])


def test_rows_carry_the_front_of_their_study_and_the_best_trial_is_its_most_accurate_point(pareto_run):
    tmp_path, _, rows, _ = pareto_run
    storage = open_storage(f"journal:{tmp_path / 'studies.journal'}")
    for learner, row in rows.items():
        if learner == "ensemble":  # no study of its own: its members' best trials are points of their fronts
            continue
        study = optuna.load_study(study_name=f"test-bags/{learner}", storage=storage)
        assert [d.name for d in study.directions] == ["MAXIMIZE", "MINIMIZE"]
        trials = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
        assert all(not t.intermediate_values for t in study.trials)  # no pruner: nothing reported
        for t in trials:  # the told values are the trial's fold means
            assert t.values == pytest.approx([np.mean(t.user_attrs["fold_balanced_accuracy"]),
                                              np.mean(t.user_attrs["fit_seconds"])])
        values = {t.number: tuple(t.values) for t in trials}
        expected = {n for n, v in values.items() if not any(_dominates(w, v) for w in values.values())}
        front = row["pareto_front"]
        assert {p["trial"] for p in front} == expected and front
        for point in front:
            assert list(point["values"]) == ["balanced_accuracy", "fit_seconds"]
            assert tuple(point["values"].values()) == pytest.approx(values[point["trial"]])
            assert point["params"] == study.trials[point["trial"]].user_attrs["estimator_params"]
        top = max(front, key=lambda p: (p["values"]["balanced_accuracy"], -p["values"]["fit_seconds"]))
        assert row["best_trial"] == top["trial"]
        assert row["tuning_score"] == pytest.approx(top["values"]["balanced_accuracy"])


def test_the_table_shows_each_front_and_the_store_the_scatter_of_every_trial(pareto_run):
    _, uri, rows, stdout = pareto_run
    header = next(line for line in stdout.splitlines() if line.startswith("learner"))
    assert "front" in header and "fast: fit s" in header
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("test-bags")
    assert "figures/pareto.png" in experiment.tags["mlflow.note.content"]
    for learner, row in rows.items():
        run = client.search_runs([experiment.experiment_id],
                                 f"tags.`automil.study` = 'test-bags/{learner}' and tags.`automil.kind` = 'study'")[0]
        assert "figures/pareto.png" in {a.path for a in client.list_artifacts(run.info.run_id, "figures")}
        assert run.data.metrics["pareto_front_size"] == len(row["pareto_front"])


def test_a_study_made_for_two_objectives_refuses_a_run_with_one(pareto_run, fresh_plugins):
    from automil import load_bags, plugins
    from automil.evaluation.folds_file import RunFolds
    from automil.tune.options import TuneOptions
    from automil.tune.studies.creation import prepare_studies

    tmp_path = pareto_run[0]
    load_in_process(fresh_plugins, tmp_path / "records")  # the built-in plugins come back after the test
    storage = f"journal:{tmp_path / 'studies.journal'}"
    options = TuneOptions(storage=storage, folds=3, protocol="tuned")
    bags = load_bags("test-bags")
    folds = RunFolds.drawn("test-bags", bags, options.folds, options.seed, options.repeats)
    with pytest.raises(ValueError) as refused:
        prepare_studies(open_storage(storage), "test-bags", bags, [plugins.get_learner("centroid")], options, folds)
    message = str(refused.value)
    assert "study 'test-bags/centroid'" in message and "balanced_accuracy, fit_seconds" in message
    assert "another --storage" in message
