"""``automil predict`` end to end: the model ``automil tune`` chose, registered in a real MLflow store,
applied to bags from the command line."""

import json
import subprocess
import sys

import mlflow
import numpy as np
import pytest

import automil
from automil.evaluation.prediction import BagPrediction, predict_bags


def _automil(*args, cwd, check=True):
    return subprocess.run([sys.executable, "-m", "automil.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, check=check)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, mlflow_store):
    """A short real tune of two fast learners on digits-bags, tracked in a sqlite MLflow store."""
    root = tmp_path_factory.mktemp("predict")
    uri = mlflow_store(root)
    out = _automil("tune", "--dataset", "digits-bags", "--learner", "pdmisvm", "--learner", "MI-SVM",
                   "--n-trials", "2", "--folds", "3", "--repeats", "1", "--timeout", "none", "--jobs", "1",
                   "--protocol", "tuned",
                   "--storage", f"journal:{root / 'studies.journal'}", "--tracking-uri", uri, "--json", "-",
                   cwd=root)
    return {"root": root, "uri": uri, "rows": json.loads(out.stdout)}


def test_tune_chooses_one_learner_and_registers_its_model(tuned):
    rows = tuned["rows"]
    chosen = [r for r in rows if r.get("selected")]
    assert len(chosen) == 1
    # the best tuning score, the ensemble only when it beats its best member, alone too by its gain's error
    tuning = {r["learner"]: r["tuning_score"] for r in rows}
    ensemble = next(r for r in rows if r["learner"] == "ensemble")
    beats = ensemble["tuning_score"] > max(tuning[m["learner"]] for m in ensemble["members"]) \
        and ensemble["tuning_gain_bound"] > 0
    best = max((r for r in rows if r["status"] == "ok" and (r is not ensemble or beats)),
               key=lambda r: r["tuning_score"])
    assert chosen[0]["tuning_score"] == best["tuning_score"]
    assert all(r["model_uri"].startswith("models:/") for r in rows if r["status"] == "ok")
    client = mlflow.MlflowClient(tuned["uri"])
    (version,) = client.search_model_versions("name = 'automil-digits-bags'")
    assert version.run_id is not None
    assert client.get_run(version.run_id).data.tags["automil.learner"] == chosen[0]["learner"]


def test_the_ensemble_row_names_its_members_and_its_model_loads_and_predicts(tuned):
    (row,) = [r for r in tuned["rows"] if r["learner"] == "ensemble"]
    assert row["status"] == "ok" and row["members"]
    assert {m["learner"] for m in row["members"]} <= {"pdmisvm", "MI-SVM"}
    assert sum(m["weight"] for m in row["members"]) == pytest.approx(1.0)
    client = mlflow.MlflowClient(tuned["uri"])
    (run,) = client.search_runs([client.get_experiment_by_name("digits-bags").experiment_id],
                                "tags.`automil.learner` = 'ensemble'")
    assert json.loads(run.data.tags["automil.members"]) == row["members"]
    bags = automil.load_bags("digits-bags")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_TRACKING_URI", tuned["uri"])
        predicted = np.asarray(mlflow.pyfunc.load_model(row["model_uri"]).predict(
            [bags[i].tolist() for i in range(bags.n_bags)]))
    # better than the majority class on the bags its members were fitted on
    assert np.mean(predicted == bags.y) > max(np.mean(bags.y), 1 - np.mean(bags.y))


def test_predict_reproduces_the_chosen_models_predictions_and_prints_a_line_per_bag(tuned):
    target = tuned["root"] / "predictions.json"
    out = _automil("predict", "models:/automil-digits-bags/latest", "--dataset", "digits-bags", "--json",
                   str(target), "--tracking-uri", tuned["uri"], cwd=tuned["root"]).stdout
    written = json.loads(target.read_text())
    bags = automil.load_bags("digits-bags")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_TRACKING_URI", tuned["uri"])
        loaded = mlflow.pyfunc.load_model("models:/automil-digits-bags/latest")
        expected = loaded.predict([bags[i].tolist() for i in range(bags.n_bags)])
    assert [p["label"] for p in written] == list(expected)
    assert [p["bag"] for p in written] == [bags.bag_name(i) for i in range(bags.n_bags)]
    assert all(set(p["scores"]) == {"0", "1"} for p in written)
    # the table beside the file, under the line naming the model: a line per bag, then the figures
    lines = out.splitlines()
    assert lines[0] == "model: full-data model (the logged fit; its labels, calibrated probabilities)"
    assert lines[2].split()[:2] == ["bag", "label"]
    assert sum(line.startswith(bags.bag_name(0) + " ") for line in lines) == 1
    assert "(full-data model): ACC" in lines[-1] and "BACC" in lines[-1]


def test_predict_names_a_file_with_other_features_and_an_unknown_model(tuned, tmp_path):
    other = tmp_path / "three-features.data"  # mill format: instance, bag, label, features
    other.write_text("i1,b1,1,0.1,0.2,0.3\ni2,b1,1,0.2,0.1,0.0\ni3,b2,0,1.0,1.0,1.0\n")
    wrong = _automil("predict", "models:/automil-digits-bags/latest", "--dataset", str(other),
                     "--tracking-uri", tuned["uri"], cwd=tuned["root"], check=False)
    assert wrong.returncode == 1 and len(wrong.stderr.strip().splitlines()) == 1
    assert "3 features" in wrong.stderr and "trained on 64" in wrong.stderr
    unknown = _automil("predict", "models:/automil-nothing/latest", "--dataset", "digits-bags",
                       "--tracking-uri", tuned["uri"], cwd=tuned["root"], check=False)
    assert unknown.returncode == 1 and len(unknown.stderr.strip().splitlines()) == 1
    assert "cannot load model 'models:/automil-nothing/latest'" in unknown.stderr


def test_the_chosen_and_the_ensembles_models_are_calibrated_and_give_sets_from_a_fit_without_their_calibration_bags(
        tuned):
    import optuna

    from automil.evaluation.calibrated import Calibrated
    from automil.evaluation.standardized import instance_scaling
    from automil.track.writing.model import load_estimator
    from automil.tune.backend.optuna_storage import open_storage

    (ensemble,) = [r for r in tuned["rows"] if r["learner"] == "ensemble"]
    bags = automil.load_bags("digits-bags")
    study = optuna.load_study(study_name="digits-bags/pdmisvm",
                              storage=open_storage(f"journal:{tuned['root'] / 'studies.journal'}"))
    calibration = np.asarray(study.user_attrs["fold_assignment"]) == 0  # the first tuning fold, held apart
    training = bags.instance_rows(np.flatnonzero(~calibration))
    for uri in ("models:/automil-digits-bags/latest", ensemble["model_uri"]):
        model = load_estimator(tuned["uri"], uri)
        assert isinstance(model, Calibrated)
        assert len(model.conformal.scores) == calibration.sum() < bags.n_bags
        # the held-apart model (each member's, for the ensemble) was fitted on every bag but those: its
        # standardization is theirs to the last bit
        for fitted in getattr(model.held_apart, "members", [model.held_apart]):
            mean, scale = instance_scaling(bags.X, training)
            np.testing.assert_array_equal(fitted.mean_, mean)
            np.testing.assert_array_equal(fitted.scale_, scale)
        proba = model.predict_proba(bags)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    out = _automil("predict", "models:/automil-digits-bags/latest", "--dataset", "digits-bags", "--coverage",
                   "0.9", "--json", "-", "--tracking-uri", tuned["uri"], cwd=tuned["root"])
    rows = json.loads(out.stdout)
    assert all(r["abstain"] == (len(r["prediction_set"]) == 2) for r in rows)
    assert f"{sum(not r['abstain'] for r in rows)} bags decided" in out.stderr
    # on the bags it was tuned on (most of them in its training: a sanity check, not the guarantee)
    assert np.mean([str(r["truth"]) in r["prediction_set"] for r in rows]) >= 0.85


def test_with_coverage_one_model_the_held_apart_one_gives_every_bags_label_scores_and_set(tuned):
    from automil.track.writing.model import load_estimator

    (ensemble,) = [r for r in tuned["rows"] if r["learner"] == "ensemble"]
    bags = automil.load_bags("digits-bags")
    for uri in ("models:/automil-digits-bags/latest", ensemble["model_uri"]):
        target = tuned["root"] / "sets.json"
        out = _automil("predict", uri, "--dataset", "digits-bags", "--coverage", "0.9", "--json", str(target),
                       "--tracking-uri", tuned["uri"], cwd=tuned["root"]).stdout
        model = load_estimator(tuned["uri"], uri)
        lines = out.splitlines()
        assert lines[0] == (f"model: held-apart model (conformal sets, coverage 0.9): the logged configuration "
                            f"fitted without its {len(model.conformal.scores)} calibration bags; labels, "
                            "probabilities, sets and witnesses all its")
        assert "(held-apart model): ACC" in lines[-1]
        rows = json.loads(target.read_text())
        decided = [r for r in rows if not r["abstain"]]
        assert decided, uri
        # the label is its set's class for every decided bag, and the most probable class of every bag
        assert all(r["prediction_set"] == [str(r["label"])] for r in decided)
        assert all(str(r["label"]) == max(r["scores"], key=r["scores"].get) for r in rows)
        # the table says the same, line by line (columns two spaces apart: bag names hold single ones)
        table = [line.split("  ") for line in lines[4:4 + len(rows)]]
        printed = [[cell.strip() for cell in row if cell.strip()] for row in table]
        assert [(row[1], row[-1]) for row in printed] == [
            (str(r["label"]), ("abstain " if r["abstain"] else "") + "{" + ",".join(r["prediction_set"]) + "}")
            for r in rows]
        # and all of it is the held-apart model's answer, as the Python API gives it
        answer = model.predict_conformal(bags, 0.9)
        assert [r["label"] for r in rows] == answer.labels.tolist()
        np.testing.assert_allclose([[r["scores"][str(c)] for c in model.classes_] for r in rows], answer.proba)
        np.testing.assert_array_equal([[str(c) in r["prediction_set"] for c in model.classes_] for r in rows],
                                      answer.sets)


def test_bag_predictions_carry_scores_for_every_class_and_the_witness():
    from automil.evaluation.standardized import Standardized

    bags = automil.load_bags("digits-bags").subset(np.arange(60))
    model = Standardized(automil.get_learner("MI-SVM").build()).fit(bags)
    out = predict_bags(model, bags)
    assert all(isinstance(p, BagPrediction) for p in out)
    assert [p.label for p in out] == model.predict(bags).tolist()
    assert all(0 <= p.witness < bags.sizes[i] for i, p in enumerate(out))
    assert all(p.truth == bags.y[i] for i, p in enumerate(out))
    json.dumps([p.to_dict() for p in out])  # JSON-ready
