"""The hold-out protocol (what ``--protocol auto`` takes on large data, ``tests/unit/test_ladder.py``) run
through the real CLI on the test plugin's small bags: one fold held out, a trial one fit on an inner
hold-out scored in blocks, the ladder of bag shares, promotion, and no rung's score anywhere near a headline,
a chosen model or the procedure's figure."""

import json

import numpy as np
import pytest
from test_tuning import automil, load, records

from automil.tune.schedule.ladder import LADDER, rung_fraction
from automil.tune.studies.creation import INNER_ATTR
from automil.tune.studies.trial_folds import INNER_BLOCKS

LEARNERS = ["recorder", "plain", "centroid", "onefeature"]


@pytest.fixture(scope="module")
def holdout_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("holdout")
    args = [a for name in LEARNERS for a in ("--learner", name)]
    done = automil(tmp_path, *args, "--protocol", "holdout", "--folds", "4", "--n-trials", "2", "--repeats", "1",
                   "--no-track", "--timeout", "none", "--jobs", "1", "--json", "out.json")
    rows = {row["learner"]: row for row in json.loads((tmp_path / "out.json").read_text())}
    return tmp_path, rows, done


def test_large_data_is_held_out_and_every_row_says_so(holdout_run):
    _, rows, done = holdout_run
    assert "protocol holdout" in done.stderr + done.stdout
    assert {row["protocol"] for row in rows.values()} == {"holdout"}
    ok = [row for row in rows.values() if row["status"] == "ok"]
    assert len(ok) >= 2
    for row in ok:
        low, high = row["interval"]
        assert row["headline"] == "hold-out" and row["folds"] == 4
        assert low <= row["balanced_accuracy"] <= high


def test_every_learner_climbs_the_ladder_and_only_the_promoted_reach_all_bags(holdout_run):
    tmp_path, rows, _ = holdout_run
    screened = [name for name in LEARNERS if rows[name]["status"] == "screened"]
    promoted = [name for name in LEARNERS if rows[name].get("rung") == "all"]
    assert len(promoted) == 2 and len(screened) == 2  # four learners: the best quarter, at least two
    for name in LEARNERS:
        trials = load(tmp_path, f"test-bags/{name}").trials
        rungs = [t for t in trials if t.user_attrs.get("rung") is not None]
        assert [t.user_attrs["rung"] for t in rungs] == list(LADDER)
        assert all(t.state.name == "FAIL" and t.value is None for t in rungs)  # never a study's best
        full = [t for t in trials if t.user_attrs.get("rung") is None]
        assert bool(full) == (name in promoted)
    for name in screened:
        row = rows[name]
        assert row["balanced_accuracy"] is None and row["trials"] == 0 and not row["selected"]
        assert row["error"].startswith("screened: BACC ") and "of the bags, ~" in row["error"]


def test_no_rung_reaches_a_headline_a_chosen_model_the_ensemble_or_the_procedure(holdout_run):
    tmp_path, rows, _ = holdout_run
    chosen = [row for row in rows.values() if row["selected"]]
    assert len(chosen) == 1 and chosen[0]["learner"] in {*LEARNERS, "ensemble"}
    assert chosen[0]["learner"] == "ensemble" or chosen[0]["rung"] == "all"
    promoted = {name for name in LEARNERS if rows[name].get("rung") == "all"}
    if "ensemble" in rows and rows["ensemble"].get("members"):
        assert {m["learner"] for m in rows["ensemble"]["members"]} <= promoted
    for name in promoted:
        best = load(tmp_path, f"test-bags/{name}").best_trial
        assert "rung" not in best.user_attrs and rows[name]["best_trial"] == best.number
    procedure = rows["automil"]
    assert procedure["status"] == "ok" and len(procedure["choices"]) == 1
    pick = rows[procedure["choices"][0]]
    assert pick["learner"] not in set(LEARNERS) - promoted
    assert procedure["balanced_accuracy"] == pytest.approx(pick["outer_splits"][0]["balanced_accuracy"])
    assert procedure["interval"] == pick["interval"]


def test_tuning_and_the_rungs_never_see_the_held_out_bags(holdout_run):
    tmp_path, _, _ = holdout_run
    study = load(tmp_path, "test-bags/recorder")
    held_out = {f"bag-{i:03d}" for i, fold in enumerate(study.user_attrs["fold_assignment"]) if fold == 0}
    n_bags = len(study.user_attrs["fold_assignment"])
    trials = {t.number: t for t in study.trials}
    complete = [t for t in study.trials if t.state.name == "COMPLETE"]
    best = study.best_trial.number if complete else None
    fits = records(tmp_path / "records", "fit")
    seen = 0
    for record in fits + records(tmp_path / "records", "score"):
        number = int(record["tag"].rsplit("#", 1)[1])
        if number == best:  # its parameters are refitted for the headline, the model and the repeat
            continue
        seen += 1
        assert not held_out & set(record["bags"])
        rung = trials[number].user_attrs.get("rung")
        if rung is not None and record in fits:  # a rung fits on its share of a fold's training bags
            inner_train = n_bags * 2 // 4
            assert len(record["bags"]) <= np.ceil(rung_fraction(rung, inner_train) * inner_train) + 2
    assert seen


def test_too_few_bags_for_an_inner_holdout_cross_validate_the_tuning_folds(holdout_run):
    tmp_path, _, _ = holdout_run  # 36 tuning bags: a fifth would hold 4 of a class
    for name in LEARNERS:
        study = load(tmp_path, f"test-bags/{name}")
        assert study.user_attrs.get(INNER_ATTR) is None
        assert all(len(t.user_attrs["fit_seconds"]) == 3 for t in study.trials if t.state.name == "COMPLETE")


def _many_bags(path, n_bags: int = 1400):
    """``n_bags`` small bags (3 instances of 4 features) in an archive: enough for an inner hold-out."""
    rng = np.random.default_rng(5)
    y = np.arange(n_bags) % 2
    X = rng.standard_normal((3 * n_bags, 4)).astype(np.float32)
    X[np.flatnonzero(y == 1) * 3, 0] += 2.0  # a witness in every positive bag
    names = np.array([f"bag-{i:04d}" for i in range(n_bags)])  # the recorder writes the names of what it saw
    np.savez(path, X=X, offsets=np.arange(0, 3 * n_bags + 1, 3), y=y, bag_names=names)
    return path


def test_a_trial_is_one_fit_on_four_fifths_of_the_tuning_bags_scored_in_blocks_of_the_fifth(tmp_path):
    data = str(_many_bags(tmp_path / "many.npz"))
    done = automil(tmp_path, "--dataset", data, "--learner", "recorder", "--learner", "centroid",
                   "--protocol", "holdout", "--folds", "4", "--n-trials", "2", "--repeats", "1", "--no-track",
                   "--timeout", "none", "--jobs", "1", "--json", "out.json")
    rows = {row["learner"]: row for row in json.loads((tmp_path / "out.json").read_text())}
    assert rows["automil"]["status"] == "ok", done.stderr
    dataset = rows["recorder"]["dataset"]
    fits, scores = records(tmp_path / "records", "fit"), records(tmp_path / "records", "score")
    completed, checked = 0, 0
    for name in ("recorder", "centroid"):
        study = load(tmp_path, f"{dataset}/{name}")
        assert study.user_attrs[INNER_ATTR]  # the studies name the inner hold-out their trials score
        assignment = np.asarray(study.user_attrs["fold_assignment"])
        tuning = {f"bag-{i:04d}" for i in np.flatnonzero(assignment != 0)}
        for trial in study.trials:
            if trial.state.name == "COMPLETE":
                assert len(trial.user_attrs["fit_seconds"]) == 1
                assert len(trial.user_attrs["fold_balanced_accuracy"]) == INNER_BLOCKS
                if "oof_scores" in trial.user_attrs:
                    assert len(trial.user_attrs["oof_scores"]) == pytest.approx(len(tuning) / 5, abs=2)
                completed += 1
            tag = f"{name}#{trial.number}"  # only the recorder writes what its fits saw; its first fit is the trial's
            fitted = [set(r["bags"]) for r in fits if r["tag"].endswith(tag)][:1]
            scored = [set(r["bags"]) for r in scores if r["tag"].endswith(tag)][:1]
            for trained, tested in zip(fitted, scored, strict=True):  # on a rung, a sample of the training bags
                assert not trained & tested and trained | tested <= tuning
                assert len(tested) == pytest.approx(len(tuning) / 5, abs=2)
                checked += 1
    assert completed and checked  # trials on all the bags, and fits the recorder saw
    # its studies continue only with trials of their kind: a nested run's would cross-validate
    refused = automil(tmp_path, "--dataset", data, "--learner", "centroid", "--protocol", "nested", "--folds", "4",
                      "--n-trials", "1", "--no-track", "--timeout", "none", "--jobs", "1", wait=False)
    _, stderr = refused.communicate(timeout=300)
    assert refused.returncode != 0
    assert f"'{dataset}/centroid'" in stderr and "was tuned on the inner hold-out" in stderr
    assert "this run's trials are by cross-validation of the tuning folds" in stderr
