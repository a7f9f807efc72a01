"""Slide features end to end: a generated CLAM folder tuned by ``automil tune --labels --groups --metric
roc_auc`` under both protocols, tracked in a real MLflow store, and the registered model applied by
``automil predict --heatmaps``: the classes by name everywhere, no patient on both sides of a split."""

import json
import subprocess
import sys

import mlflow
import numpy as np
import pytest

from automil.data.datasets import load_bags
from automil.evaluation.folds import split_groups
from automil.evaluation.folds_file import read_fold_file
from automil_datasets.slides import CLASSES, write_slide_set


def _automil(*args, cwd):
    return subprocess.run([sys.executable, "-m", "automil.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=900, check=True)


@pytest.fixture(scope="module", params=["nested", "tuned"])
def tuned(request, tmp_path_factory, mlflow_store):
    root = tmp_path_factory.mktemp(f"slides-{request.param}")
    # 20 cases: on 12 the learner is not above chance by its uncertainty over 3 folds, and no model is chosen
    written = write_slide_set(root / "features", "clam", n_cases=20, n_features=8, seed=11, pt=False)
    uri = mlflow_store(root)
    out = _automil("tune", "--dataset", str(written.features), "--labels", str(written.labels), "--groups",
                   "case_id", "--metric", "roc_auc", "--learner", "pdmisvm", "--n-trials", "2", "--folds", "3",
                   "--repeats", "2", "--timeout", "none", "--jobs", "1", "--protocol", request.param,
                   "--storage", f"journal:{root / 'studies.journal'}", "--tracking-uri", uri, "--json", "-",
                   cwd=root)
    rows = json.loads(out.stdout)
    (row,) = [r for r in rows if r["learner"] == "pdmisvm"]
    return {"root": root, "uri": uri, "row": row, "written": written, "protocol": request.param,
            "bags": load_bags(written.features)}


def test_the_leaderboard_row_carries_roc_auc_beside_acc_and_bacc_and_names_the_classes(tuned):
    row = tuned["row"]
    assert row["status"] == "ok" and row["metric"] == "roc_auc"
    assert 0.0 <= row["roc_auc"] <= 1.0 and row["accuracy"] is not None and row["balanced_accuracy"] is not None
    assert row["repeated_roc_auc"] is not None
    if tuned["protocol"] == "nested":
        assert row["roc_auc"] == row["nested_roc_auc"]
        assert all(split["roc_auc"] is not None for split in row["outer_splits"])
    assert row["classes"] == list(CLASSES)


def test_mlflow_holds_the_auc_of_every_trial_the_named_classes_and_folds_that_keep_patients_apart(tuned):
    client = mlflow.MlflowClient(tuned["uri"])
    (parent,) = client.search_runs([e.experiment_id for e in client.search_experiments()],
                                   "tags.`automil.learner` = 'pdmisvm' and tags.`automil.kind` = 'study'")
    assert parent.data.metrics["roc_auc"] == pytest.approx(tuned["row"]["roc_auc"])
    trials = client.search_runs([parent.info.experiment_id],
                                f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    assert trials and all("roc_auc" in t.data.metrics for t in trials if t.info.status == "FINISHED")
    result = json.loads(open(client.download_artifacts(parent.info.run_id, "result.json",
                                                       str(tuned["root"] / "result"))).read())
    assert result["classes"] == list(CLASSES)
    folds = client.download_artifacts(parent.info.run_id, "folds.json", str(tuned["root"] / "folds"))
    bags = tuned["bags"]
    assert set(json.loads(open(folds).read())["groups"]) == set(bags.groups)
    given = read_fold_file(folds).run_folds("slides", bags, 2)
    for assignment in (given.tuning, *given.repeats):
        assert split_groups(assignment, bags.groups) is None


def test_predict_names_the_classes_and_draws_a_heatmap_per_slide(tuned):
    root, written = tuned["root"], tuned["written"]
    target, heatmaps = root / "predictions.json", root / "heatmaps"
    (experiment,) = [e.name for e in mlflow.MlflowClient(tuned["uri"]).search_experiments() if e.name != "Default"]
    out = _automil("predict", f"models:/automil-{experiment}/latest", "--dataset", str(written.features),
                   "--labels", str(written.labels), "--json", str(target), "--heatmaps", str(heatmaps),
                   "--tracking-uri", tuned["uri"], cwd=root).stdout
    predictions = json.loads(target.read_text())
    assert {p["label"] for p in predictions} <= set(CLASSES) and {p["truth"] for p in predictions} == set(CLASSES)
    assert all(set(p["scores"]) == set(CLASSES) for p in predictions)
    assert "AUC" in out.splitlines()[-1]
    assert sorted(p.stem for p in heatmaps.glob("*.png")) == sorted(written.slides)
    assert sorted(p.stem for p in heatmaps.glob("*.csv")) == sorted(written.slides)
    assert np.isfinite(np.loadtxt(heatmaps / f"{written.slides[0]}.csv", delimiter=",", skiprows=1)).all()
