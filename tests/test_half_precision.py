"""Features an encoder wrote in float16 stay float16 from the slide files to the run's file (half of float32's
bytes), and every learner reads them as float32; slides of mixed precision take the widest."""

import shutil

import h5py
import numpy as np
import pytest

from automil import Bags, get_learner
from automil.data.datasets import load_bags
from automil.evaluation.standardized import Standardized
from automil.tune.schedule.memory import instance_bytes
from automil.tune.workers.processes import release_instances, share_instances
from automil_datasets.slides import write_slide_set


def halve(features_dir, names=None):
    """Rewrite the ``features`` of the slides ``names`` (default: every slide) of a feature folder as float16."""
    for path in sorted(features_dir.glob("*.h5")):
        if names is None or path.stem in names:
            with h5py.File(path, "r+") as f:
                features = f["features"][()].astype(np.float16)
                del f["features"]
                f["features"] = features


def slide_files(root):
    return next(root.rglob("features_*"))


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """A TRIDENT folder of float32 slides (as most encoders write them)."""
    return write_slide_set(tmp_path_factory.mktemp("single"), "trident", n_cases=8, n_features=16, seed=5).features


@pytest.fixture(scope="module")
def half(single, tmp_path_factory):
    """The same folder with every slide in float16."""
    root = tmp_path_factory.mktemp("half") / "cohort"
    shutil.copytree(single, root)
    halve(slide_files(root))
    return root


def stored(root, name):
    with h5py.File(slide_files(root) / f"{name}.h5") as f:
        return f["features"][()]


def test_a_folder_of_float16_slides_is_read_as_float16_with_its_values(half):
    bags = load_bags(half)
    assert bags.X.dtype == np.float16
    for i in (0, 5, bags.n_bags - 1):
        expected = stored(half, bags.names[i])
        assert expected.dtype == np.float16 and np.array_equal(bags[i], expected)


def test_the_runs_file_holds_float16_in_half_the_bytes_of_float32_and_gives_the_values_back(single, half, tmp_path):
    sizes = {}
    for name, root in (("single", single), ("half", half)):
        (tmp_path / name).mkdir()
        shared = share_instances(lambda root=root: load_bags(root), tmp_path / name)
        try:
            matrix = np.load(shared.instances_file, mmap_mode="r")
            assert shared.instances_file.startswith(str(tmp_path / name))
            sizes[name] = matrix.nbytes, str(matrix.dtype)
            if name == "half":
                for i in range(shared.n_bags):
                    assert np.array_equal(matrix[shared.offsets[i]:shared.offsets[i + 1]],
                                          stored(half, shared.names[i]))
        finally:
            release_instances(shared)
    assert sizes["half"][1] == "float16" and sizes["single"][1] == "float32"
    assert 2 * sizes["half"][0] == sizes["single"][0] > 0


def test_float16_beside_float32_slides_is_float32_holding_the_float16_values_exactly(single, tmp_path):
    root = tmp_path / "mixed"
    shutil.copytree(single, root)
    names = sorted(p.stem for p in slide_files(root).glob("*.h5"))[::3]
    halve(slide_files(root), names)
    bags = load_bags(root)
    assert bags.X.dtype == np.float32
    i = list(bags.names).index(names[1])
    assert np.array_equal(bags[i], stored(root, names[1]).astype(np.float32))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_pt_slides_of_half_precision_keep_float16_and_read_bfloat16_as_float32(tmp_path, dtype):
    torch = pytest.importorskip("torch")
    written = write_slide_set(tmp_path, "clam", n_cases=4, n_features=8, seed=6)
    for path in (written.features / "pt_files").glob("*.pt"):
        torch.save(torch.load(path).to(getattr(torch, dtype)), path)
    bags = load_bags(written.features / "pt_files", labels=written.labels)
    assert bags.X.dtype == (np.float16 if dtype == "float16" else np.float32)
    tensor = torch.load(written.features / "pt_files" / f"{bags.names[2]}.pt")
    assert np.array_equal(bags[2], tensor.float().numpy())


def test_a_bag_folder_of_float16_npy_files_is_shared_as_float16(tmp_path):
    folder = tmp_path / "bags"
    folder.mkdir()
    rng = np.random.default_rng(1)
    bags = {f"bag-{i}": rng.standard_normal((5 + i, 3)).astype(np.float16) for i in range(4)}
    (folder / "labels.csv").write_text("bag,label\n" + "".join(f"{name},{i % 2}\n" for i, name in enumerate(bags)))
    for name, features in bags.items():
        np.save(folder / f"{name}.npy", features)
    (tmp_path / "scratch").mkdir()
    shared = share_instances(lambda: load_bags(folder), tmp_path / "scratch")
    try:
        assert shared.instances_file is not None and shared.X.dtype == np.float16
        assert all(np.array_equal(shared[i], bags[name]) for i, name in enumerate(shared.names))
    finally:
        release_instances(shared)


def float16_bags(seed=0):
    rng = np.random.default_rng(seed)
    offsets = np.arange(0, 1_201, 30)
    y = np.arange(len(offsets) - 1) % 2
    X = rng.standard_normal((1_200, 12)).astype(np.float16)
    X[np.repeat(y, 30) == 1, :3] += np.float16(0.8)
    return Bags(X, offsets, y)


def test_learners_read_float16_bags_as_float32_streamed_gathered_or_given_directly():
    bags = float16_bags()
    assert bags.X.dtype == np.float16 and instance_bytes(bags) == 4 * bags.X.size  # fitted in float32
    as_float32 = Bags(bags.X.astype(np.float32), bags.offsets, bags.y)
    train, test = np.flatnonzero(np.arange(40) % 4 < 2), np.flatnonzero(np.arange(40) % 4 >= 2)
    # streamed, gathered, a network's batches
    for learner, params in (("bag-stats", {"n_estimators": 50}), ("sil", {}), ("abmil", {"epochs": 2, "seeds": 1})):
        model = Standardized(get_learner(learner).build(**params)).fit_subset(bags, train)
        assert model.transform(bags.subset(test)).X.dtype == np.float32
        reference = Standardized(get_learner(learner).build(**params)).fit_subset(as_float32, train)
        assert np.array_equal(model.mean_, reference.mean_) and np.array_equal(model.scale_, reference.scale_)
        assert np.array_equal(model.decision_function(bags.subset(test)),
                              reference.decision_function(as_float32.subset(test)))
    direct = get_learner("bag-stats").build(n_estimators=50).fit(bags)  # no standardizer: read as float32
    reference = get_learner("bag-stats").build(n_estimators=50).fit(as_float32)
    assert np.array_equal(direct.decision_function(bags), reference.decision_function(as_float32))


def test_bags_of_float16_arrays_stay_float16_and_the_widest_of_a_list_wins():
    halves = [np.ones((3, 2), dtype=np.float16), np.zeros((2, 2), dtype=np.float16)]
    assert Bags.from_list(halves).X.dtype == np.float16
    assert Bags.from_list([*halves, np.ones((1, 2), dtype=np.float32)]).X.dtype == np.float32
    assert Bags.from_list([*halves, np.ones((1, 2))]).X.dtype == np.float64
    assert Bags.from_list([np.ones((2, 2), dtype=np.int8)]).X.dtype == np.float64
