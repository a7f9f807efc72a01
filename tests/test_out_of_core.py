"""Cohorts larger than memory: a slide folder is written into the run's mapped file slide by slide, and a fold
is standardized from that file in blocks, with the statistics of the in-memory standardization."""

import os
import subprocess
import sys
import textwrap

import h5py
import numpy as np
import pytest

from automil import Bags
from automil.data.datasets import load_bags
from automil.data.instance_matrix import writing_instances
from automil.evaluation import standardized
from automil.tune.workers.processes import release_instances, share_instances

SLIDES, PATCHES, WIDTH = 24, 1_000, 1_024  # 98 MB of float32 features, 4 MB a slide


def slide_features(index: int, patches: int = PATCHES, width: int = WIDTH) -> np.ndarray:
    rng = np.random.default_rng(index)
    return (rng.standard_normal((patches, width), dtype=np.float32) + index).astype(np.float32)


@pytest.fixture(scope="module")
def trident_cohort(tmp_path_factory):
    """A TRIDENT folder of ``SLIDES`` slides of ``PATCHES`` x ``WIDTH`` float32 features, with its labels CSV."""
    root = tmp_path_factory.mktemp("cohort")
    features = root / "20x_256px_0px_overlap" / "features_uni_v1"
    features.mkdir(parents=True)
    rows = ["case_id,slide_id,label"]
    for index in range(SLIDES):
        with h5py.File(features / f"slide-{index:02d}.h5", "w") as f:
            f["features"] = slide_features(index)
            f["coords"] = np.stack([np.arange(PATCHES), np.full(PATCHES, index)], axis=1).astype(np.int64)
        rows.append(f"case-{index // 2},slide-{index:02d},{'tumor' if index % 2 else 'normal'}")
    (root / "slides.csv").write_text("\n".join(rows) + "\n")
    return root


def test_a_folder_read_inside_writing_instances_lands_in_the_file_mapped_read_only(trident_cohort, tmp_path):
    with writing_instances(tmp_path / "instances.npy") as written:
        bags = load_bags(trident_cohort)
    assert written.matrix is not None and np.may_share_memory(bags.X, written.matrix)
    assert not bags.X.flags.writeable and bags.X.dtype == np.float32
    assert bags.X.shape == (SLIDES * PATCHES, WIDTH)
    for index in (0, 7, SLIDES - 1):
        np.testing.assert_array_equal(bags[index], slide_features(index))
    np.testing.assert_array_equal(np.load(tmp_path / "instances.npy", mmap_mode="r")[PATCHES:2 * PATCHES],
                                  slide_features(1))
    assert list(bags.groups[:4]) == ["case-0", "case-0", "case-1", "case-1"]
    assert bags.coords[-1].tolist() == [PATCHES - 1, SLIDES - 1]


def test_the_same_folder_read_without_a_file_is_an_array_in_memory(trident_cohort):
    bags = load_bags(trident_cohort)
    assert bags.X.flags.writeable and bags.instances_file is None
    np.testing.assert_array_equal(bags[3], slide_features(3))


def test_a_folder_larger_than_the_memory_a_process_may_take_is_shared_without_holding_it(trident_cohort, tmp_path):
    # RLIMIT_DATA bounds a process's private memory, not the pages of a file it maps: reading the 98 MB folder
    # into an array would need that much more, writing it slide by slide needs one slide (4 MB).
    allowance = 32 * 2**20
    script = textwrap.dedent(f"""
        import resource
        import numpy as np
        from automil.data.datasets import load_bags
        from automil.tune.workers.processes import release_instances, share_instances

        def data_bytes():
            for line in open("/proc/self/status"):
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024

        load_bags({str(trident_cohort)!r}).n_bags  # the readers and h5py imported and warmed on a first read
        limit = data_bytes() + {allowance}
        resource.setrlimit(resource.RLIMIT_DATA, (limit, resource.getrlimit(resource.RLIMIT_DATA)[1]))
        try:
            np.empty({SLIDES * PATCHES * WIDTH}, dtype=np.float32)
        except MemoryError:
            print("an array of the folder's size is refused")
        shared = share_instances(lambda: load_bags({str(trident_cohort)!r}))
        print(shared.instances_file is not None, shared.X.shape, float(shared[5].sum(dtype=np.float64)))
        release_instances(shared)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr[-2000:]
    refused, shared = result.stdout.splitlines()
    assert refused == "an array of the folder's size is refused"
    expected = float(slide_features(5).sum(dtype=np.float64))
    assert shared == f"True {(SLIDES * PATCHES, WIDTH)} {expected}"


def test_a_folder_shared_for_a_run_is_one_file_that_release_removes(trident_cohort, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    shared = share_instances(lambda: load_bags(trident_cohort))
    try:
        files = sorted(p.name for p in tmp_path.rglob("*.npy"))
        # the slides' coords beside the matrix, mapped: no process gets them pickled
        assert files == ["instances.coords.npy", "instances.npy"] and shared.instances_file.endswith("instances.npy")
        assert shared.coords_file.endswith("instances.coords.npy") and not shared.coords.flags.writeable
        assert isinstance(shared, Bags) and shared.n_bags == SLIDES
    finally:
        release_instances(shared)
    assert not list(tmp_path.rglob("*.npy"))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_streamed_statistics_of_a_folds_rows_are_the_in_memory_ones_to_the_last_bit(dtype, monkeypatch):
    rng = np.random.default_rng(0)
    X = (rng.standard_normal((5_000, 7)) * rng.uniform(0.1, 100, 7) + rng.uniform(-1e3, 1e3, 7)).astype(dtype)
    rows = np.sort(rng.choice(5_000, 3_001, replace=False))
    monkeypatch.setattr(standardized, "BLOCK_BYTES", 8 * 7 * 97)  # 97 rows a block: 31 blocks, the last short
    mean, scale = standardized.instance_scaling(X, rows)
    fold = X[rows].astype(np.float64)
    assert np.array_equal(mean, fold.mean(axis=0)) and np.array_equal(scale, fold.std(axis=0))
    assert mean.dtype == scale.dtype == np.float64
    whole = standardized.instance_scaling(X)
    assert np.array_equal(whole[0], X.astype(np.float64).mean(axis=0))


def test_a_fold_standardized_from_the_mapped_file_equals_the_one_standardized_in_memory(trident_cohort, tmp_path,
                                                                                        monkeypatch):
    from automil import get_learner

    monkeypatch.setattr(standardized, "BLOCK_BYTES", 2**20)  # blocks of 128 rows of 1,024 features
    with writing_instances(tmp_path / "instances.npy"):
        mapped = load_bags(trident_cohort)
    train = np.array([0, 3, 4, 9, 10, 13, 15, 20, 21, 22])
    streamed = standardized.Standardized(get_learner("bag-stats").build()).fit_subset(mapped, train)
    in_memory = standardized.Standardized(get_learner("bag-stats").build()).fit(mapped.subset(train))
    assert np.array_equal(streamed.mean_, in_memory.mean_) and np.array_equal(streamed.scale_, in_memory.scale_)
    test = mapped.subset([1, 2, 5])
    assert np.array_equal(streamed.transform(test).X, in_memory.transform(test).X)
    np.testing.assert_array_equal(streamed.decision_function(test), in_memory.decision_function(test))
    rows = mapped.instance_rows(train)
    np.testing.assert_array_equal(standardized.standardized_rows(mapped.X, rows, streamed.mean_, streamed.scale_),
                                  in_memory.transform(mapped.subset(train)).X)
