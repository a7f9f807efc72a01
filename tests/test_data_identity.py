"""A data file is known by its content: its studies carry its stem and the digest of its bags, not its path."""

import shutil

import numpy as np
import optuna
from driver_support import load_in_process
from test_warm_start import Notes

from automil.data.datasets import dataset_name, load_bags
from automil.tune.backend.optuna_storage import open_storage
from automil.tune.driver import tune
from automil.tune.options import TuneOptions
from automil.tune.studies.creation import changed_data_note


def _write_bags(path, seed: int):
    """A MILL text file of 16 bags; class-1 bags hold an instance shifted in feature 0."""
    rng = np.random.default_rng(seed)
    lines = []
    for b in range(16):
        bag = rng.standard_normal((3, 4))
        bag[0, 0] += 3.0 * (b % 2)
        lines += [f"i{b}_{i},bag-{b},{b % 2}," + ",".join(f"{v:.4f}" for v in row) for i, row in enumerate(bag)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def test_a_registered_dataset_keeps_its_name_and_a_file_is_named_by_stem_and_content(tmp_path):
    _write_bags(tmp_path / "fox.csv.gz", seed=0)  # not gzip inside: read by content, named without suffixes
    _write_bags(tmp_path / "other" / "fox.csv.gz", seed=0)
    here, there = (load_bags(tmp_path / p) for p in ("fox.csv.gz", "other/fox.csv.gz"))
    assert dataset_name(tmp_path / "fox.csv.gz", here) == f"fox-{here.digest[:8]}"
    assert dataset_name(tmp_path / "fox.csv.gz", here) == dataset_name(tmp_path / "other" / "fox.csv.gz", there)
    assert dataset_name("digits-bags", here) == "digits-bags"


def test_the_same_file_at_two_paths_shares_its_studies_and_a_changed_file_gets_new_ones(tmp_path, fresh_plugins):
    load_in_process(fresh_plugins, tmp_path / "records")
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    options = {"n_trials": 2, "timeout": None, "folds": 2, "repeats": 1, "jobs": 1, "storage": storage,
               "protocol": "tuned", "track": False, "ensemble": False, "warm_start": False}
    first, moved = tmp_path / "machine-a" / "bags.mill", tmp_path / "machine-b" / "data" / "bags.mill"
    _write_bags(first, seed=0)
    shutil.copy(first, moved.parent.mkdir(parents=True) or moved)

    notes = Notes()
    (row,) = tune(str(first), ["centroid"], TuneOptions(**{**options, "n_trials": 1}), notes)
    name = row.dataset
    assert name.startswith("bags-") and str(tmp_path) not in name
    (row,) = tune(str(moved), ["centroid"], TuneOptions(**options), notes)
    assert row.dataset == name
    study = optuna.load_study(study_name=f"{name}/centroid", storage=storage)
    assert len(study.trials) == 2, "the copy continued the first path's study"
    assert not any("differ" in line for line in notes.lines)

    _write_bags(moved, seed=1)  # other bags under the same name: new studies, and the driver's note says so
    changed = dataset_name(moved, load_bags(moved))
    assert changed.startswith("bags-") and changed != name
    said = changed_data_note(open_storage(storage), changed, str(moved))
    assert str(moved) in said and name in said and f"new studies {changed}/" in said
    assert changed_data_note(open_storage(storage), name, str(first)) is None, "no note for known bags"
