"""The model a run at scale commits to first (``automil/tune/final/first_model.py``), through the real CLI on a
generated TRIDENT folder taken for a cohort by its portfolio (a ``cohorts`` regime bounded at 100 patches), in a
real MLflow store: registered before any trial when above chance, so that a run stopped by SIGTERM right after
holds it; kept or replaced at the end by the rule the ``automil`` row chooses by (the inner score)."""

import json
import os
import signal
import subprocess
import sys

import mlflow
import pytest
from driver_support import plugin_env, plugin_site

from automil.data.datasets import load_bags
from automil.tune.portfolio.members import COHORT_MEAN_BAG_SIZE
from automil_datasets.slides import write_slide_set

pytestmark = pytest.mark.timeout(600)
COHORT_BOUND = 100  # the test's slides hold about 170 patches: a cohort for this portfolio, not for automil's


def _cohort(root, first: dict) -> dict:
    """A folder of 40 cases (about 100 slides) and a portfolio whose cohorts regime starts at ``COHORT_BOUND``
    patches with the one member ``first``."""
    written = write_slide_set(root / "features", "trident", n_cases=40, n_features=8, seed=3, pt=False,
                              witness_radius=4.0)
    portfolio = root / "portfolio.json"
    portfolio.write_text(json.dumps({"regimes": [{"name": "cohorts", "min_mean_bag_size": COHORT_BOUND,
                                                  "members": [first]}]}))
    return {"written": written, "portfolio": portfolio}


def _command(root, cohort: dict, uri: str, *learners: str) -> list[str]:
    written = cohort["written"]
    return [sys.executable, "-m", "automil.cli", "tune", "--dataset", str(written.features), "--labels",
            str(written.labels), "--groups", "case_id", "--metric", "roc_auc", *(a for n in learners for a in
                                                                                ("--learner", n)),
            "--protocol", "holdout", "--folds", "4", "--n-trials", "2", "--repeats", "1", "--timeout", "none",
            "--jobs", "1", "--portfolio", str(cohort["portfolio"]), "--storage", f"journal:{root / 'studies.journal'}",
            "--tracking-uri", uri, "--json", str(root / "out.json")]


def _versions(uri: str) -> list:
    client = mlflow.MlflowClient(uri)
    (registered,) = client.search_registered_models()
    return sorted(client.search_model_versions(f"name='{registered.name}'"), key=lambda v: int(v.version))


def test_the_slides_are_no_cohort_for_automils_own_bound(tmp_path):
    """The test shrinks the scale through its portfolio file only: at automil's bound these slides are not one."""
    cohort = _cohort(tmp_path, {"learner": "plain", "params": {"C": 1.0}})
    bags = load_bags(cohort["written"].features, labels=cohort["written"].labels, groups="case_id")
    assert COHORT_BOUND <= bags.sizes.mean() < COHORT_MEAN_BAG_SIZE


def test_a_run_stopped_right_after_its_first_model_holds_it_registered(tmp_path, mlflow_store):
    cohort = _cohort(tmp_path, {"learner": "plain", "params": {"C": 1.0}})
    uri = mlflow_store(tmp_path)
    # sleepy's fits take a minute: the run is far from its end when the first model is registered
    process = subprocess.Popen(_command(tmp_path, cohort, uri, "plain", "sleepy"), cwd=tmp_path, text=True,
                               env={**plugin_env(plugin_site(), tmp_path / "records"), "TMPDIR": str(tmp_path)},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = []
    for line in process.stderr:  # the event, not a clock: the progress line that says it is registered
        lines.append(line)
        if "first model:" in line and "registered as models:/" in line:
            break
    else:
        pytest.fail("the run ended without registering a first model:\n" + "".join(lines))
    os.kill(process.pid, signal.SIGTERM)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "interrupted" in err and not os.path.exists(tmp_path / "out.json")  # stopped before its end
    (version,) = _versions(uri)
    assert line.rstrip().endswith(f"models:/{version.name}/{version.version}")
    client = mlflow.MlflowClient(uri)
    run = client.get_run(version.run_id)
    assert run.data.tags["automil.learner"] == "first-model" and version.tags["automil.learner"] == "first-model"
    assert run.data.metrics["roc_auc"] > 0.5


@pytest.fixture(scope="module")
def completed(tmp_path_factory, mlflow_store):
    root = tmp_path_factory.mktemp("first-model")
    # a first member weaker than plain, above chance on the held-out bags
    cohort = _cohort(root, {"learner": "onefeature", "params": {"feature": 0}})
    uri = mlflow_store(root)
    done = subprocess.run(_command(root, cohort, uri, "plain", "onefeature"), cwd=root, capture_output=True,
                          text=True, timeout=600,
                          env={**plugin_env(plugin_site(), root / "records"), "TMPDIR": str(root)})
    assert done.returncode == 0, done.stderr
    rows = {row["learner"]: row for row in json.loads((root / "out.json").read_text())}
    return {"rows": rows, "uri": uri, "done": done}


def test_a_completed_run_keeps_or_replaces_its_first_model_by_the_inner_scores(completed):
    rows, versions = completed["rows"], _versions(completed["uri"])
    first = rows["first-model"]
    assert first["registered_model"] == f"models:/{versions[0].name}/1" and first["tuning_score"] is not None
    (shipped,) = [row for row in rows.values() if row["selected"]]
    if shipped["learner"] == "first-model":  # kept: nothing registered after it, and the final choice no better
        assert len(versions) == 1 and "the shipped model, registered first" in shipped["error"]
        choice = shipped["error"].split("the final choice, ", 1)
        if len(choice) == 2 and "has no logged model" not in choice[1]:
            chosen = rows[choice[1].split(",", 1)[0]]
            assert chosen["outer_splits"][0]["inner"] <= first["tuning_score"]
    else:  # replaced: its version registered after the first model's, on a better inner score
        assert len(versions) == 2 and shipped["registered_model"] == f"models:/{versions[1].name}/2"
        assert shipped["outer_splits"][0]["inner"] > first["tuning_score"]
        assert first["error"].startswith("onefeature, the portfolio's first member: replaced: the final choice, "
                                         + shipped["learner"])
    assert rows["automil"]["choices"]  # the procedure's row, as without a first model


def test_the_first_model_is_trained_before_any_trial(completed):
    err = completed["done"].stderr
    trained = err.index("automil: first model: onefeature {'feature': 0} on ")
    assert err.index("registered as models:/") > trained
    assert "(screening)" not in err[:trained] and "trial 1/" not in err[:trained]
