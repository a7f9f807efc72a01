"""`automil tune` end to end on a file whose bags carry instance labels: the instance figures of the learners
that find instances are row fields, MLflow metrics and report columns, and equal a computation by hand."""

import csv
import io
import json
import os
import subprocess
import sys

import mlflow
import numpy as np
import optuna
import pytest
from sklearn.metrics import roc_auc_score

from automil import cli
from automil.data.datasets import load_bags
from automil.evaluation.folds import fold_splits
from automil.records import TrialAttr
from automil.tune.backend.optuna_storage import open_storage
from automil.tune.workers.fits import fit_predict

FOLDS = 3


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, mlflow_store):
    """sil and mi-svm (instance scores and a witness) tuned on 60 ``synthetic`` bags, whose planted instance is
    known: label 1 in a positive bag, 0 in a negative one, -1 for the noise. (A learner with neither has no
    figure: tests/unit/test_instance_metrics.py, tests/test_report.py.)"""
    from automil_datasets.synthetic import make_synthetic_bags

    tmp_path = tmp_path_factory.mktemp("instances")
    bags = make_synthetic_bags(60, seed=3)
    np.savez(tmp_path / "planted.npz", X=bags.X, offsets=bags.offsets, y=bags.y, instance_y=bags.instance_y)
    uri = mlflow_store(tmp_path)
    storage = f"journal:{tmp_path / 'studies.journal'}"
    command = [sys.executable, "-m", "automil.cli", "tune", "--dataset", str(tmp_path / "planted.npz"),
               "--learner", "sil", "--learner", "mi-svm", "--n-trials", "1", "--folds", str(FOLDS),
               "--repeats", "1", "--no-ensemble", "--timeout", "none", "--jobs", "1", "--storage", storage,
               "--tracking-uri", uri, "--json", "rows.json"]
    done = subprocess.run(command, cwd=tmp_path, env={**os.environ, "AUTOMIL_LOAD_PLUGINS": "svm"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = {row["learner"]: row for row in json.loads((tmp_path / "rows.json").read_text())}
    return {"rows": rows, "uri": uri, "storage": storage, "bags": load_bags(tmp_path / "planted.npz")}


def _by_hand(tuned, learner):
    """The learner's instance AUC and witness precision, mean over the outer folds, from refits of each outer
    split's best parameters (read from its study) scored here with scikit-learn and a loop over the bags."""
    storage, bags = open_storage(tuned["storage"]), tuned["bags"]
    dataset = tuned["rows"][learner]["dataset"]
    assignment = optuna.load_study(study_name=f"{dataset}/{learner}", storage=storage).user_attrs["fold_assignment"]
    aucs, precisions = [], []
    for i, (train, test) in enumerate(fold_splits(assignment)):
        best = optuna.load_study(study_name=f"{dataset}/{learner}/outer-{i}", storage=storage).best_trial
        model = fit_predict(bags, learner, best.user_attrs[TrialAttr.ESTIMATOR_PARAMS], train, seed=0,
                            return_model=True).model
        testing = bags.subset(test)
        aucs.append(roc_auc_score(testing.instance_y == 1, model.instance_scores(testing)[:, 1]))
        witness = model.witness(testing)
        hits = [testing.instance_y[testing.offsets[b] + witness[b]] == 1 for b in range(testing.n_bags)
                if testing.y[b] == 1]
        precisions.append(np.mean(hits))
    return np.mean(aucs), np.mean(precisions)


@pytest.mark.parametrize("learner", ["sil", "mi-svm"])
def test_instance_figures_of_a_witness_learner_equal_refits_scored_by_hand(tuned, learner):
    row = tuned["rows"][learner]
    auc, precision = _by_hand(tuned, learner)
    assert row["instance_auc"] == pytest.approx(auc, abs=1e-9)
    assert row["witness_precision"] == pytest.approx(precision, abs=1e-9)
    assert row["instance_auc_std"] is not None and row["witness_precision_std"] is not None  # over 3 folds
    # Out of a random scorer's reach: with ~10 positive among ~80 test instances per fold, a random AUC has an
    # sd of about 0.1 per fold (0.06 over 3), and a random witness in bags of 3 to 5 hits the planted instance
    # about 28% of the time (sd about 0.08 over 30 positive bags); both bounds lie over 5 sd away.
    assert row["instance_auc"] > 0.85 and row["witness_precision"] > 0.7


def test_instance_figures_are_metrics_of_the_learners_run_and_columns_of_the_report(tuned, capsys):
    client = mlflow.MlflowClient(tuned["uri"])
    dataset = tuned["rows"]["sil"]["dataset"]
    experiment = client.get_experiment_by_name(dataset)
    parents = {run.data.tags["automil.learner"]: run.data.metrics
               for run in client.search_runs([experiment.experiment_id], "tags.`automil.kind` = 'study'")}
    for key in ("instance_auc", "instance_auc_std", "witness_precision", "witness_precision_std"):
        assert parents["sil"][key] == pytest.approx(tuned["rows"]["sil"][key])
    capsys.readouterr()
    assert cli.main(["report", "--format", "csv", "--tracking-uri", tuned["uri"]]) == 0
    table = {row["learner"]: row for row in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    for learner in ("sil", "mi-svm"):
        assert float(table[learner][f"{dataset} inst AUC mean"]) == pytest.approx(
            100 * tuned["rows"][learner]["instance_auc"], abs=1e-4)
        assert float(table[learner][f"{dataset} wit prec mean"]) == pytest.approx(
            100 * tuned["rows"][learner]["witness_precision"], abs=1e-4)
