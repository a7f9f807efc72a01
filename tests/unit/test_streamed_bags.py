"""Streamed folds: the bags of the run's matrix read a block at a time give the figures of the gathered fold."""

import os

import numpy as np
import pytest
import scipy.sparse as sp

import automil
from automil import streamed_bags
from automil.evaluation.standardized import Standardized, instance_scaling
from automil.streamed_bags import StreamedBags
from automil.tune.workers.fits import fit_predict
from automil_embedding import coding
from automil_embedding.bag_stats import BagStats
from automil_embedding.coding import MiFV


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    """300 bags of 3 to 40 float32 instances, mapped read-only from a file as a run's instances are."""
    rng = np.random.default_rng(0)
    sizes = rng.integers(3, 41, size=300)
    X = rng.standard_normal((sizes.sum(), 16)).astype(np.float32)
    y = rng.integers(0, 2, size=300)
    X[np.repeat(y == 1, sizes) & (rng.random(sizes.sum()) < 0.1), 0] += 3.0  # a few witnesses
    in_memory = automil.Bags(X, np.concatenate(([0], np.cumsum(sizes))), y,
                             instance_y=np.repeat(y, sizes), groups=np.arange(300) // 3)
    return in_memory.mapped(tmp_path_factory.mktemp("instances") / "instances.npy")


TRAIN, TEST = np.arange(0, 300, 2), np.arange(1, 300, 2)[::-1]


def test_a_streamed_fold_reads_the_standardized_bags_of_the_gathered_fold(bags):
    standardizer = Standardized(BagStats()).fit(bags.subset(TRAIN))
    gathered = standardizer.transform(bags.subset(TEST))
    streamed = standardizer.transform(StreamedBags(bags, TEST))
    assert isinstance(streamed, StreamedBags) and streamed.n_bags == len(TEST)
    assert np.array_equal(streamed.offsets, gathered.offsets) and np.array_equal(streamed.y, gathered.y)
    assert np.array_equal(streamed.instance_y, gathered.instance_y)
    assert np.array_equal(streamed.groups, gathered.groups)
    assert all(np.array_equal(a, b) for a, b in zip(streamed, gathered))
    assert np.array_equal(np.vstack([b.X for b in streamed.blocks(max_bytes=2_000)]), gathered.X)
    positions = np.array([[0, 1], [2, 0]])
    taken = streamed.take(np.array([[3, 3], [7, 0]]), positions)
    assert np.array_equal(taken[0, 1], gathered[3][1]) and np.array_equal(taken[1, 0], gathered[7][2])
    with pytest.raises(IndexError, match="past its bag's end"):
        streamed.take(np.array([0]), np.array([streamed.sizes[0]]))


def test_blocks_hold_about_their_bytes_and_a_larger_bag_alone(bags):
    streamed = StreamedBags(bags, TRAIN)
    blocks = list(streamed.blocks(max_bytes=8 * 16 * 100))  # 100 rows of float64
    assert sum(b.n_bags for b in blocks) == streamed.n_bags
    assert all(b.n_instances <= 100 or b.n_bags == 1 for b in blocks)
    assert np.array_equal(np.concatenate([b.y for b in blocks]), streamed.y)


@pytest.mark.parametrize("learner", [BagStats, MiFV])
def test_a_learner_that_streams_gets_the_figures_of_the_gathered_fold_without_gathering_it(bags, monkeypatch, learner):
    monkeypatch.setattr(coding, "GMM_SAMPLE", 1_000)  # miFV's codebook from a sample of the fold's instances
    gathered = Standardized(learner(random_state=0)).fit(bags.subset(TRAIN))
    read = []
    original = StreamedBags._read
    monkeypatch.setattr(streamed_bags, "BLOCK_BYTES", 8 * 16 * 500)  # blocks of about 500 rows
    monkeypatch.setattr(StreamedBags, "_read", lambda self, rows: read.append(np.arange(bags.n_instances)[rows].size)
                        or original(self, rows))
    streamed = Standardized(learner(random_state=0)).fit_subset(bags, TRAIN)
    assert read and max(read) < bags.subset(TRAIN).n_instances  # a block at a time, never the fold
    assert np.array_equal(streamed.mean_, gathered.mean_) and np.array_equal(streamed.scale_, gathered.scale_)
    assert np.array_equal(streamed.decision_function(StreamedBags(bags, TEST)),
                          gathered.decision_function(bags.subset(TEST)))
    # the model fitted on streamed bags predicts bags in memory, as a loaded model does
    assert np.array_equal(streamed.predict(bags.subset(TEST)), gathered.predict(bags.subset(TEST)))
    # and every bag of the run's matrix a block at a time, never as one standardized copy
    read.clear()
    assert np.array_equal(streamed.predict(bags), gathered.predict(bags))
    assert read and max(read) < bags.n_instances


def test_the_fit_worker_streams_the_test_fold_of_a_learner_that_accepts_it(bags):
    out = fit_predict(bags, "bag-stats", {}, TRAIN, TEST, seed=0)
    model = Standardized(BagStats(random_state=0)).fit(bags.subset(TRAIN))
    assert np.array_equal(out.y_pred, model.predict(bags.subset(TEST)))


def test_bag_means_are_those_of_the_gathered_bags_across_blocks_and_kinds(bags, monkeypatch):
    monkeypatch.setattr(streamed_bags, "BLOCK_BYTES", 2_000)  # many blocks of a few bags
    fold = bags.subset(TEST)
    expected = np.array([np.asarray(b, dtype=np.float64).mean(axis=0) for b in fold.to_list()])
    np.testing.assert_allclose(fold.means(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(StreamedBags(bags, TEST).means(), expected, rtol=1e-12, atol=1e-12)
    mean, scale = instance_scaling(bags.X)
    np.testing.assert_allclose(StreamedBags(bags, TEST, mean, scale).means(), (expected - mean) / scale, rtol=1e-5,
                               atol=1e-6)  # standardized as read, in float32
    sparse = automil.Bags(sp.csr_matrix(np.asarray(fold.X)), fold.offsets, fold.y)
    np.testing.assert_allclose(sparse.means(), expected, rtol=1e-12, atol=1e-12)


def test_sparse_bags_are_not_streamed():
    import scipy.sparse as sp

    sparse = automil.Bags(sp.random(10, 4, density=0.5, random_state=0, format="csr"), [0, 5, 10], [0, 1])
    with pytest.raises(ValueError, match="only dense bags are streamed"):
        StreamedBags(sparse)


def _mapped_kb() -> int:
    """This process's resident pages of mapped files (kB)."""
    for line in open("/proc/self/status"):
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile in /proc/self/status")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the process's memory from /proc")
def test_a_pass_over_a_mapped_matrix_holds_a_block_of_its_pages_not_all_it_read(tmp_path):
    rows = 320_000  # 80 MB of float32 at 64 features: ten blocks
    X = np.lib.format.open_memmap(tmp_path / "big.npy", mode="w+", dtype=np.float32, shape=(rows, 64))
    X[:] = np.random.default_rng(0).standard_normal((rows, 64), dtype=np.float32)
    X.flush()
    del X
    before = _mapped_kb()
    bags = automil.Bags(np.load(tmp_path / "big.npy", mmap_mode="r"), np.arange(0, rows + 1, 1_000),
                        np.arange(rows // 1_000) % 2)  # validated: every value read once
    assert len(bags.digest) == 64
    assert instance_scaling(bags.X, np.arange(rows))[0].shape == (64,)
    assert sum(block.n_bags for block in StreamedBags(bags).blocks()) == bags.n_bags
    assert _mapped_kb() - before < 40_000, "the passes kept more than a few blocks of the file mapped"
