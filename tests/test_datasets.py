"""The dataset plugin: every MANIFEST.toml file loads with its published counts; the generated sets behave."""

import os
import tomllib
from pathlib import Path

import numpy as np
import pytest

import automil
from automil.plugins import UnknownNameError
from automil_datasets.catalog import MANIFEST_KEYS, SIVAL_CLASSES
from automil_datasets.digits import TARGET_DIGIT, make_digits_bags
from automil_datasets.synthetic import class_centres, make_synthetic_bags

MANIFEST_PATH = Path(os.environ["AUTOMIL_DATA_DIR"]) / "MANIFEST.toml"
MANIFEST = tomllib.loads(MANIFEST_PATH.read_text())["datasets"] if MANIFEST_PATH.is_file() else {}
CASES = [(key, name) for name, key in MANIFEST_KEYS.items() if key in MANIFEST]


def test_every_manifest_dataset_is_registered(data_dir):
    assert MANIFEST, f"no datasets in {MANIFEST_PATH}"
    assert set(MANIFEST) <= set(MANIFEST_KEYS.values())
    assert set(MANIFEST_KEYS) <= set(automil.datasets())


@pytest.mark.parametrize("key, name", CASES, ids=[name for _, name in CASES])
def test_loading_a_manifest_dataset_reproduces_its_counts(data_dir, key, name):
    facts = MANIFEST[key]
    spec = automil.get_dataset(name)
    assert spec.files[0].path == facts["files"][0]
    assert spec.files[0].sha256 == facts["sha256"][facts["files"][0]]
    bags = spec.load()
    assert (bags.n_bags, bags.n_instances, bags.n_features) == (
        facts["n_bags"], facts["n_instances"], facts["n_features"])
    sizes = bags.sizes
    assert (sizes.min(), sizes.max()) == (facts["bag_size"]["min"], facts["bag_size"]["max"])
    assert sizes.mean() == pytest.approx(facts["bag_size"]["mean"], abs=1e-3)
    classes, counts = np.unique(bags.y, return_counts=True)
    if name == "sival":  # the six objects, told apart by bag id (README, format D)
        objects = [c.split(" ")[0] for c in facts["positive_classes"] + facts["negative_classes"]]
        assert sorted(classes) == sorted(objects)
        assert set(counts) == {facts["n_bags"] // len(objects)}
    else:
        assert list(classes) == [0, 1]
        assert list(counts) == [facts["n_negative_bags"], facts["n_positive_bags"]]
    if "n_features_with_nonzero" in facts:
        assert bags.is_sparse
        assert bags.X.nnz == facts["n_nonzero_entries"]
        assert len(np.unique(bags.X.indices)) == facts["n_features_with_nonzero"]
    assert (spec.n_bags, spec.n_instances, spec.n_features, spec.n_classes) == (
        bags.n_bags, bags.n_instances, bags.n_features, len(classes))


def test_hockey_has_its_real_instance_labels_inside_positive_bags_only(data_dir):
    bags = automil.load_bags("hockey")
    positive_in_bag = np.add.reduceat(bags.instance_y, bags.offsets[:-1])
    np.testing.assert_array_equal(positive_in_bag > 0, bags.y == 1)


def test_sival_binary_labels_the_three_positive_objects(data_dir):
    objects = automil.load_bags("sival").y
    binary = automil.load_bags("sival-binary").y
    positive = {"BlueScrunge", "GreenTeaBox", "SmileyFaceDoll"}
    np.testing.assert_array_equal(binary == 1, [o in positive for o in objects])
    assert positive <= set(SIVAL_CLASSES)


@pytest.mark.parametrize("name", ["synthetic", "digits-bags"])
def test_generated_datasets_need_no_files_and_their_listed_facts_match(name):
    spec = automil.get_dataset(name)
    assert spec.files == () and spec.available()
    bags = spec.load()
    assert (spec.n_bags, spec.n_instances, spec.n_features, spec.n_classes) == (
        bags.n_bags, bags.n_instances, bags.n_features, len(np.unique(bags.y)))


def test_an_unknown_dataset_name_suggests_close_matches():
    with pytest.raises(UnknownNameError, match="unknown dataset 'musk3'; did you mean") as caught:
        automil.load_bags("musk3")
    assert "musk1" in str(caught.value) and "musk2" in str(caught.value)


def test_a_registered_name_loads_through_load_bags(data_dir):
    assert automil.load_bags("musk1").n_bags == 92


# ---- synthetic --------------------------------------------------------------------------------------------
def test_synthetic_bags_hold_three_to_five_instances_and_plant_the_class_witness_first():
    bags = make_synthetic_bags(600, n_features=4, n_classes=3, seed=1)
    assert set(np.unique(bags.sizes)) == {3, 4, 5}
    assert list(np.bincount(bags.y)) == [200, 200, 200]
    first = bags.offsets[:-1]
    np.testing.assert_array_equal(bags.instance_y[first], bags.y)
    assert (np.delete(bags.instance_y, first) == -1).all()
    noise = np.delete(bags.X, first, axis=0)
    assert np.abs(noise).max() <= 1.0
    # the witness lies within a few standard deviations of its class centre, closer to it than to others
    witness = bags.X[first]
    distances = np.linalg.norm(witness[:, None, :] - class_centres(4, 3)[None], axis=2)
    assert (distances[np.arange(600), bags.y] < 5).all()
    assert (distances.argmin(axis=1) == bags.y).mean() > 0.9


def test_synthetic_bags_are_reproducible_and_share_centres_across_seeds():
    a, b = make_synthetic_bags(50, seed=3), make_synthetic_bags(50, seed=3)
    np.testing.assert_array_equal(a.X, b.X)
    c = make_synthetic_bags(50, seed=4)
    assert not np.array_equal(a.X[:10], c.X[:10])
    np.testing.assert_array_equal(class_centres(10, 3), class_centres(10, 25)[:3])


def test_synthetic_scales_to_a_hundred_thousand_bags_and_25_classes():
    bags = make_synthetic_bags(100_000, n_features=30, n_classes=25, seed=0)
    assert bags.n_bags == 100_000 and len(np.unique(bags.y)) == 25
    assert 3 * 100_000 <= bags.n_instances <= 5 * 100_000


def test_synthetic_rejects_a_single_class():
    with pytest.raises(ValueError, match="n_classes >= 2"):
        make_synthetic_bags(10, n_classes=1)


# ---- digits-bags ------------------------------------------------------------------------------------------
def test_digits_bags_are_positive_exactly_when_they_hold_a_nine():
    bags = make_digits_bags(n_positive=30, n_negative=40, mean_bag_size=10, seed=2)
    assert list(np.bincount(bags.y)) == [40, 30]
    nines = np.add.reduceat(bags.instance_y, bags.offsets[:-1])
    np.testing.assert_array_equal(nines > 0, bags.y == 1)
    assert bags.n_features == 64 and bags.sizes.min() >= 1
    assert abs(bags.sizes.mean() - 10) < 1.5
    from sklearn.datasets import load_digits

    digits = load_digits()
    is_nine = (digits.data[:, None, :] == bags.X[None]).all(axis=2)[digits.target == TARGET_DIGIT].any(axis=0)
    np.testing.assert_array_equal(is_nine, bags.instance_y == 1)


def test_digits_bags_are_reproducible_from_the_seed():
    np.testing.assert_array_equal(make_digits_bags(seed=5).X, make_digits_bags(seed=5).X)
    assert not np.array_equal(make_digits_bags(seed=5).sizes, make_digits_bags(seed=6).sizes)
