"""The hold-out protocol (what ``--protocol auto`` takes on large data, ``tests/unit/test_ladder.py``) run
through the real CLI on the test plugin's small bags: one fold held out, the ladder of bag shares,
promotion, and no rung's score anywhere near a headline, a chosen model or the procedure's figure."""

import json

import numpy as np
import pytest
from test_tuning import automil, load, records

from automil.tune.schedule.ladder import LADDER, rung_fraction

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
