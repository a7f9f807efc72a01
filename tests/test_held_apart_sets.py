"""Prediction sets from a fit without the calibration bags, end to end: a real nested `automil tune` with the
recording test learner (every fit writes the bags it trained on and scored), tracked in a real MLflow store,
then `automil predict --coverage` on the model it registered."""

import json
import subprocess
import sys

import numpy as np
import pytest
from driver_support import load_in_process, plugin_env, plugin_site
from test_tuning import automil, load, records

FOLDS = 4


@pytest.fixture(scope="module")
def run(tmp_path_factory, mlflow_store):
    tmp_path = tmp_path_factory.mktemp("held-apart")
    uri = mlflow_store(tmp_path)
    automil(tmp_path, "--learner", "recorder", "--n-trials", "2", "--folds", str(FOLDS), "--protocol", "nested",
            "--repeats", "1", "--timeout", "none", "--jobs", "1", "--tracking-uri", uri, "--json", "out.json")
    assignment = np.asarray(load(tmp_path, "test-bags/recorder").user_attrs["fold_assignment"])
    fold_of = {f"bag-{i:03d}": fold for i, fold in enumerate(assignment)}
    fits = records(tmp_path / "records", "fit")
    pairs = []
    for score in records(tmp_path / "records", "score"):  # scored by the model its process fitted last
        fit = max((f for f in fits if f["pid"] == score["pid"] and f["time"] <= score["time"]),
                  key=lambda f: f["time"])
        pairs.append(({fold_of[b] for b in fit["bags"]}, {fold_of[b] for b in score["bags"]}, fit["tag"], fit, score))
    rows = {row["learner"]: row for row in json.loads((tmp_path / "out.json").read_text())}
    return {"root": tmp_path, "uri": uri, "assignment": assignment, "fits": fits, "pairs": pairs, "rows": rows}


def _held_apart(run, tag_prefix, folds):
    """The fits of the run whose tag starts with ``tag_prefix`` that scored exactly the folds ``folds``."""
    return [(trained, fit, score) for trained, scored, tag, fit, score in run["pairs"]
            if tag.startswith(tag_prefix) and scored == folds]


def test_the_models_held_apart_fit_never_saw_its_calibration_fold_and_scored_it_alone(run):
    # the main study's best trial, fitted on every fold but the first and scored on that one, after its model
    # (the tuning fitted the same bags for that fold: the same fit, made again to keep it)
    (model,) = [fit for fit in run["fits"] if len(fit["bags"]) == len(run["assignment"])]
    (fit,) = [f for f in _held_apart(run, "test-bags/recorder#", {0}) if f[1]["time"] > model["time"]]
    trained, fitted, scored = fit
    assert trained == set(range(1, FOLDS))
    assert not set(fitted["bags"]) & set(scored["bags"])
    assert len(scored["bags"]) == (run["assignment"] == 0).sum()


def test_each_outer_split_measures_its_sets_with_a_fit_without_its_outer_fold_and_one_inner_fold(run):
    procedure = run["rows"]["automil"]
    assert procedure["choices"] == ["recorder"] * FOLDS
    for outer in range(FOLDS):
        apart = min(set(range(FOLDS)) - {outer})
        (fit,) = _held_apart(run, f"test-bags/recorder/outer-{outer}#", {apart, outer})
        trained, fitted, scored = fit
        assert trained == set(range(FOLDS)) - {apart, outer}
        assert not set(fitted["bags"]) & set(scored["bags"])
    row = run["rows"]["recorder"]
    # n of the band: the bags held apart in each split (no groups: bags), their mean over the splits
    held = [(run["assignment"] == min(set(range(FOLDS)) - {outer})).sum() for outer in range(FOLDS)]
    assert row["calibration_bags"] == pytest.approx(np.mean(held))
    assert set(row["coverage"]) == {"0.8", "0.9", "0.95"} and row["held_out_bags"] == len(run["assignment"])
    assert procedure["coverage"] == row["coverage"] and procedure["calibration_bags"] == row["calibration_bags"]


def test_predict_gives_the_registered_models_sets_and_abstentions_all_from_its_held_apart_fit(run, fresh_plugins):
    target = run["root"] / "sets.json"
    done = subprocess.run([sys.executable, "-m", "automil.cli", "predict", "models:/automil-test-bags/latest",
                           "--dataset", "test-bags", "--coverage", "0.9", "--json", str(target),
                           "--tracking-uri", run["uri"]],
                          cwd=run["root"], env=plugin_env(plugin_site(), run["root"] / "predict-records"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "set at 0.9" in done.stdout
    assert "prediction sets at coverage 0.9 (marginal):" in done.stdout and "bags decided" in done.stdout
    calibration = (run["assignment"] == 0).sum()  # the first tuning fold
    assert done.stdout.splitlines()[0] == (
        f"model: held-apart model (conformal sets, coverage 0.9): the logged configuration fitted without its "
        f"{calibration} calibration bags; labels, probabilities, sets and witnesses all its")
    rows = json.loads(target.read_text())
    assert all(r["prediction_set"] == [str(r["label"])] for r in rows if not r["abstain"])
    assert all(str(r["label"]) == max(r["scores"], key=r["scores"].get) for r in rows)
    # the probabilities printed are the held-apart fit's through the calibration map, not the logged fit's
    from automil import load_bags
    from automil.evaluation.calibrated import logits
    from automil.evaluation.prediction import bag_scores
    from automil.track.writing.model import load_estimator

    load_in_process(fresh_plugins, run["root"] / "in-process-records")
    model, bags = load_estimator(run["uri"], "models:/automil-test-bags/latest"), load_bags("test-bags")
    printed = np.array([[r["scores"][str(c)] for c in model.classes_] for r in rows])
    apart = model.calibrator.predict_proba(logits(bag_scores(model.held_apart, bags), model.probabilities))
    np.testing.assert_allclose(printed, apart)
    assert not np.allclose(printed, model.predict_proba(bags)), "the two fits score the bags alike: no test"
