"""Shareable folds end to end: a run logs its folds as ``folds.json``, and another run given that file with
``--folds-file`` tunes and re-evaluates on exactly those folds (real command, real journal storage, real
MLflow sqlite store, musk1 from the data directory, the built-in nsk learner)."""

import json

import mlflow
import optuna
import pytest

from automil import cli
from automil.tune.backend.optuna_storage import open_storage

RUN = ["--dataset", "musk1", "--learner", "nsk", "--n-trials", "1", "--repeats", "2", "--timeout", "none",
       "--jobs", "1", "--protocol", "tuned"]


def tune(directory, *args) -> int:
    return cli.main(["tune", *RUN, "--storage", f"journal:{directory / 'studies.journal'}", *args])


def logged_folds(uri: str, destination) -> str:
    """The path of ``folds.json`` downloaded from the nsk run of the store ``uri``."""
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("musk1")
    [run] = client.search_runs([experiment.experiment_id],
                               "tags.`automil.study` = 'musk1/nsk' and tags.`automil.kind` = 'study'")
    return mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="folds.json",
                                               dst_path=str(destination), tracking_uri=uri)


def stored_assignment(directory) -> list[int]:
    storage = open_storage(f"journal:{directory / 'studies.journal'}")
    return optuna.load_study(study_name="musk1/nsk", storage=storage).user_attrs["fold_assignment"]


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory, mlflow_store, data_dir):
    """Run A draws its folds from the seed; run B (another storage, another store, another seed) is given
    A's ``folds.json``."""
    a, b = tmp_path_factory.mktemp("run-a"), tmp_path_factory.mktemp("run-b")
    uri_a, uri_b = mlflow_store(a), mlflow_store(b)
    assert tune(a, "--folds", "3", "--tracking-uri", uri_a) == 0
    given = logged_folds(uri_a, a / "download")
    assert tune(b, "--folds-file", given, "--seed", "7", "--tracking-uri", uri_b) == 0
    return a, b, given, logged_folds(uri_b, b / "download")


def test_a_run_given_the_logged_folds_tunes_and_re_evaluates_on_exactly_those_folds(round_trip):
    a, b, given, logged_by_b = round_trip
    written = json.loads(open(given).read())
    assert written["format"] == "automil-folds" and written["folds"] == 3 and len(written["repeats"]) == 2
    # B logs the very folds it was given: the studies' folds and both repeats, bag by bag
    assert open(logged_by_b).read() == open(given).read()
    assert stored_assignment(b) == stored_assignment(a)


def test_a_rerun_without_the_folds_file_is_refused_rather_than_mixing_folds(round_trip, capsys):
    _, b, _, _ = round_trip
    assert tune(b, "--folds", "3", "--seed", "7", "--no-track") == 1
    assert "was tuned on the folds of a folds file" in capsys.readouterr().err


def test_a_rerun_with_other_folds_than_the_stored_ones_is_refused(round_trip, capsys, tmp_path):
    a, _, given, _ = round_trip
    other = json.loads(open(given).read())
    first, second = other["tuning"][0], other["tuning"][1]
    first[0], second[0] = second[0], first[0]  # two bags trade their tuning folds
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    assert tune(a, "--folds-file", str(path), "--no-track") == 1
    assert f"was tuned on other folds than {path} gives" in capsys.readouterr().err


def test_a_folds_option_that_disagrees_with_the_folds_file_names_both(round_trip, capsys, tmp_path):
    _, _, given, _ = round_trip
    assert tune(tmp_path, "--folds-file", given, "--folds", "5", "--no-track") == 1
    assert f"{given} holds 3 folds and --folds says 5" in capsys.readouterr().err
