"""One copy of a run's instances: workers map the file the main process wrote, float32 stays float32."""

import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from contract_cases import contract_cases

from automil import Bags, checks
from automil.evaluation.standardized import Standardized, instance_scaling
from automil.tune.workers.fits import fit_predict, load_learners
from automil.tune.workers.isolation import FitTimeout, FitWorker
from automil.tune.workers.processes import RUN_DIRECTORY_PREFIX, release_instances, remove_orphans, share_instances

N_INSTANCES, N_FEATURES = 200_000, 64  # 51 MB of float32: well above a worker's memory noise


def anonymous_bytes(_data=None) -> int:
    """The calling process's private resident memory (not pages mapped from files)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no RssAnon in /proc/self/status")


def read_all(bags: Bags):
    """Touch every instance; say how the worker holds them."""
    total = float(bags.X.sum(dtype=np.float64))
    return total, anonymous_bytes(), bags.X.flags.writeable, str(bags.X.dtype)


def nap(_bags, seconds):
    time.sleep(seconds)


def float32_bags(n_instances=N_INSTANCES, bag_size=100, seed=0) -> Bags:
    rng = np.random.default_rng(seed)
    offsets = np.arange(0, n_instances + 1, bag_size)
    y = np.arange(len(offsets) - 1) % 2
    X = rng.standard_normal((n_instances, N_FEATURES), dtype=np.float32)
    X[offsets[:-1][y == 1], 0] += 4.0  # a witness in every positive bag
    return Bags(X, offsets, y)


@pytest.fixture
def run_directories(tmp_path, monkeypatch):
    """The run directories made under a private temporary directory, listed on demand."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return lambda: sorted(p.name for p in tmp_path.glob(f"{RUN_DIRECTORY_PREFIX}*"))


def test_mapped_bags_pickle_as_the_file_name_and_map_it_again(run_directories):
    bags = float32_bags(n_instances=10_000)
    shared = share_instances(lambda: bags)
    try:
        assert len(pickle.dumps(shared)) < bags.X.nbytes / 100
        received = pickle.loads(pickle.dumps(shared))
        np.testing.assert_array_equal(received.X, bags.X)
        assert received.X.dtype == np.float32 and not received.X.flags.writeable
        assert received.subset([1, 0]).X.flags.writeable  # a fold is the fit's own copy
    finally:
        release_instances(shared)
    assert run_directories() == []


def test_the_coords_of_shared_bags_are_mapped_too_and_pickle_as_a_file_name(run_directories):
    bags = float32_bags(n_instances=10_000)
    coords = np.random.default_rng(1).integers(0, 100_000, size=(bags.n_instances, 2))
    bags = Bags(bags.X, bags.offsets, bags.y, coords=coords)
    for load in (lambda: bags, lambda: bags.with_labels(bags.y)):  # also a copy of the bags that carries them
        shared = share_instances(load)
        try:
            # neither the matrix (320 KB) nor the coords (160 KB) travel
            assert len(pickle.dumps(shared)) < coords.nbytes / 10
            received = pickle.loads(pickle.dumps(shared))
            np.testing.assert_array_equal(received.coords, coords)
            assert not received.coords.flags.writeable
            np.testing.assert_array_equal(received.subset([3, 1]).coords, bags.subset([3, 1]).coords)
            np.testing.assert_array_equal(pickle.loads(pickle.dumps(received.with_labels(bags.y))).coords, coords)
        finally:
            release_instances(shared)
    assert run_directories() == []


def test_a_worker_reads_shared_instances_without_a_private_copy(run_directories):
    bags = float32_bags()
    shared = share_instances(lambda: bags)
    try:
        with FitWorker(threads=1) as worker:
            worker.set_data(None)
            before = worker.call(anonymous_bytes, timeout=60)
            worker.set_data(shared)
            total, after, writeable, dtype = worker.call(read_all, timeout=60)
        assert total == pytest.approx(float(bags.X.sum(dtype=np.float64)))
        assert (writeable, dtype) == (False, "float32")
        # a pickled copy would add the whole matrix (51 MB) of private memory
        assert after - before < bags.X.nbytes / 4
    finally:
        release_instances(shared)


def shm_segments() -> set[str]:
    """The POSIX shared-memory segments in ``/dev/shm``: its plain files (a directory there, as a test of
    scratch space makes beside this one, is no segment)."""
    shm = Path("/dev/shm")
    return {p.name for p in shm.iterdir() if p.is_file()} if shm.is_dir() else set()


def test_a_killed_worker_leaves_the_run_file_alone_and_release_removes_it(run_directories):
    shared = share_instances(lambda: float32_bags(n_instances=10_000))
    segments = shm_segments()
    try:
        (directory,) = run_directories()
        with FitWorker(threads=1) as worker:
            worker.set_data(shared)
            with pytest.raises(FitTimeout):
                worker.call(nap, 60.0, timeout=1.0)
            assert sorted(os.listdir(Path(shared.instances_file).parent)) == ["instances.npy", "owner"]
            total = worker.call(read_all, timeout=60)[0]  # a new process maps the same file
        assert total == pytest.approx(float(shared.X.sum(dtype=np.float64)))
        assert shm_segments() <= segments  # no shared-memory segment left behind
    finally:
        release_instances(shared)
    assert run_directories() == []


def test_float32_bags_stay_float32_through_a_fit_in_a_worker(run_directories):
    shared = share_instances(lambda: float32_bags(n_instances=20_000))
    try:
        with FitWorker(threads=1, preload=load_learners) as worker:
            worker.set_data(shared)
            out = worker.call(fit_predict, "bag-stats", {}, np.arange(100), np.arange(100, 200), 0, True,
                              timeout=120)
    finally:
        release_instances(shared)
    assert out.model.transform(float32_bags(n_instances=1_000)).X.dtype == np.float32
    y = np.arange(200) % 2
    assert np.mean(out.y_pred == y[100:]) > 0.6  # better than chance


def test_float32_scaling_matches_float64_without_upcasting_the_matrix():
    X = float32_bags(n_instances=3_000).X
    mean32, scale32 = instance_scaling(X)
    mean64, scale64 = instance_scaling(X.astype(np.float64))
    np.testing.assert_allclose(mean32, mean64, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(scale32, scale64, rtol=1e-10)
    assert mean32.dtype == scale32.dtype == np.float64


def test_standardized_keeps_the_instances_dtype():
    bags32 = float32_bags(n_instances=2_000)
    bags64 = Bags(bags32.X.astype(np.float64), bags32.offsets, bags32.y)
    from automil import get_learner

    for bags in (bags32, bags64):
        model = Standardized(get_learner("bag-stats").build()).fit(bags)
        assert model.transform(bags).X.dtype == bags.X.dtype


def test_a_run_removes_the_files_of_runs_whose_main_process_was_killed(run_directories, tmp_path):
    script = ("import sys, numpy as np; from automil import Bags;"
              "from automil.tune.workers.processes import share_instances;"
              "bags = share_instances(lambda: Bags(np.ones((4, 2), np.float32), [0, 2, 4], [0, 1])); print(flush=True);"
              "sys.stdin.read()")
    killed = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "TMPDIR": str(tmp_path)},
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    killed.stdout.readline()
    (orphan,) = run_directories()
    remove_orphans()
    assert run_directories() == [orphan]  # its main process still runs
    killed.kill()
    killed.wait()
    shared = share_instances(lambda: float32_bags(n_instances=1_000))
    try:
        assert orphan not in run_directories() and len(run_directories()) == 1  # only this run's own
    finally:
        release_instances(shared)


@pytest.mark.slow
@pytest.mark.parametrize(("learner", "check"), contract_cases())
def test_every_learner_honours_its_contract_on_float32_bags(learner, check, monkeypatch):
    float64_bags = checks.witness_bags

    def float32_witness_bags(*args, **kwargs):
        bags = float64_bags(*args, **kwargs)
        return Bags(bags.X.astype(np.float32), bags.offsets, bags.y, instance_y=bags.instance_y)

    monkeypatch.setattr(checks, "witness_bags", float32_witness_bags)
    check()


def test_without_a_writable_temporary_directory_the_bags_stay_in_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    bags = float32_bags(n_instances=1_000)
    assert share_instances(lambda: bags) is bags and bags.instances_file is None
