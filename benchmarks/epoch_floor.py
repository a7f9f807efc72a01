"""The floor of a network's epoch on this machine, beside a network's measured epoch on a generated cohort.

    python benchmarks/epoch_floor.py [--slides 100] [--patches 5000] [--features 768] [--learner abmil]
        [--max-instances 512] [--batch-size 8] [--hidden 128] [--epochs 2] [--threads N]
        [--shape SLIDES PATCHES FEATURES] [--out DIR] [--cohort DIR]

Measured here: the bytes a second read from the page cache and from disk (the run file's first
``READ_LIMIT`` bytes, so that the second read finds them cached on a file larger than memory), and the matmul
throughput of the networks' first projection (the cohort's features x ``--hidden``, float32, torch,
``--threads`` threads: the fit's ``OMP_NUM_THREADS`` share; default the fit's own count), timed before and
after the epochs, the faster taken (on a shared machine the slower one is other processes' load, not the
floor). Both reads are ``os.preadv`` of the run's file in 16 MB pieces, start to end; from disk after
``fdatasync`` and ``posix_fadvise(POSIX_FADV_DONTNEED)`` on the whole file (this process's own mappings of it
released first), from the cache right after that read. On a virtual machine the host may still cache the
disk: the figure is what this guest sees.

The floor of an epoch: the patches it samples (each slide's ``min(patches, max_instances)``) x features x
bytes a value over the read speed, plus the projection's flops over the matmul throughput, forward and
backward about three forward passes: ``3 x 2 x patches x features x hidden``. It is printed for the generated
cohort and for ``--shape`` (default the 31 GB cohort: 1,000 slides x 10,000 patches x 768), in float32 and
float16.

The measured epoch: the cohort written by ``experiments/large_cohort.py`` (``--slides`` x ``--patches`` x
``--features`` float32, 1 % witnesses) under ``--out`` (default a temporary folder), or the slide folder
``--cohort`` (its ``slides.csv``, ``case_id`` groups: one ``large_cohort.py`` wrote, kept), read into the run's
mapped file as a run reads it (``automil.load_bags`` inside ``writing_instances``), a generated folder then
deleted, and the learner's network trained on every slide by its own training loop
(``automil_deep.training.fit_network``: its batches, sampling and standardization, no held-out pass): one
epoch with the file dropped from the cache, then ``--epochs`` with the file cached, each read ahead in a
thread and not (``Batches.prefetch`` 1 and 0). Where the run's file is larger than memory, the "cached"
epochs read most of their windows from disk as well. Everything written is deleted at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))

READ_PIECE = 1 << 24  # bytes a preadv call reads
READ_LIMIT = 4 << 30  # bytes of the run's file a read speed is measured on: well within this machine's memory
MATMUL_SECONDS = 1.0  # each of the three timings of the projection runs at least this long
WAYS = {1: "read ahead", 0: "not read ahead"}  # Batches.prefetch


def read_speed(path: Path, from_disk: bool) -> float:
    """Bytes a second reading the first ``READ_LIMIT`` bytes of ``path``; ``from_disk``: its pages dropped from
    the cache first."""
    buffer = bytearray(READ_PIECE)
    fd = os.open(path, os.O_RDONLY)
    try:
        if from_disk:
            os.fdatasync(fd)  # dirty pages are not dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        size, offset, start = min(os.fstat(fd).st_size, READ_LIMIT), 0, time.perf_counter()
        while offset < size:
            offset += os.preadv(fd, [buffer], offset) or size
        return size / (time.perf_counter() - start)
    finally:
        os.close(fd)


def drop_from_cache(path: Path, X) -> None:
    """Release this process's mapping of ``X`` and drop the pages of ``path`` from the page cache."""
    from automil.streamed_bags import release_pages

    release_pages(X)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def matmul_throughput(rows: int, features: int, width: int, threads: int) -> float:
    """Flops a second of ``(rows x features) @ (features x width)`` in float32 on ``threads`` threads, the best
    of three timings of at least ``MATMUL_SECONDS`` each."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        X, W = torch.randn(rows, features), torch.randn(width, features)
        torch.nn.functional.linear(X, W)  # warm
        best = 0.0
        for _ in range(3):
            calls, start = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - start) < MATMUL_SECONDS:
                torch.nn.functional.linear(X, W)
                calls += 1
            best = max(best, 2 * rows * features * width * calls / elapsed)
        return best
    finally:
        torch.set_num_threads(before)


def floor_seconds(sampled: int, features: int, hidden: int, value_bytes: int, read: float,
                  flops: float) -> tuple[float, float, float]:
    """The floor of an epoch that samples ``sampled`` patches, and its two parts (reading, projecting), in
    seconds."""
    reading = sampled * features * value_bytes / read
    projecting = 3 * 2 * sampled * features * hidden / flops
    return reading + projecting, reading, projecting


def write_run_file(out: Path, slides: int, patches: int, features: int, cohort: Path | None = None):
    """The bags of ``cohort`` (kept), else of a generated cohort (its TRIDENT folder deleted after), mapped
    from the run's file ``out/instances.npy``."""
    import large_cohort  # experiments/

    import automil
    from automil.data.instance_matrix import writing_instances

    folder = cohort or out / "cohort"
    if cohort is None:
        large_cohort.write_large_cohort(folder, slides, (patches, patches), features, witness_share=0.01, seed=0)
    run_file = out / "instances.npy"
    with writing_instances(run_file):
        bags = automil.load_bags(str(folder), labels=str(folder / "slides.csv"), groups="case_id")
    if cohort is None:
        shutil.rmtree(folder)
    return bags, run_file


def measured_epochs(bags, learner: str, params: dict, epochs: int, prefetch: int) -> float:
    """Mean seconds of ``epochs`` epochs of ``learner``'s network on every bag, as its fit trains it."""
    import torch

    import automil
    from automil_deep.training import fit_network, seeded_torch

    estimator = automil.get_learner(learner).estimator(**params)
    estimator._fit_standardization(bags)  # as its fit standardizes
    batches = estimator._batches(bags, torch.device("cpu"))
    batches.prefetch = prefetch
    y = np.unique(bags.y, return_inverse=True)[1]
    with seeded_torch(0):
        network = estimator._network(bags.n_features, 2)
        training = fit_network(network, batches, y, np.arange(bags.n_bags), np.array([], dtype=np.int64),
                               learning_rate=estimator.learning_rate, weight_decay=estimator.weight_decay,
                               epochs=epochs, batch_size=estimator.batch_size,
                               max_instances=estimator.max_instances, patience=epochs,
                               rng=np.random.default_rng(0), report=False)
    return training.epoch_seconds


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--slides", type=int, default=100)
    parser.add_argument("--patches", type=int, default=5000, help="patches a slide of the generated cohort")
    parser.add_argument("--features", type=int, default=768)
    parser.add_argument("--learner", default="abmil", help="a deep learner: abmil, mi-net, MI-Net, dsmil, transmil")
    parser.add_argument("--max-instances", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=2, help="epochs timed with the file cached (each way)")
    parser.add_argument("--threads", type=int, help="torch threads (default: OMP_NUM_THREADS, else torch's)")
    parser.add_argument("--shape", type=int, nargs=3, default=[1000, 10000, 768],
                        metavar=("SLIDES", "PATCHES", "FEATURES"), help="a cohort whose floor is printed too")
    parser.add_argument("--out", help="where the cohort is written (default: a temporary folder); deleted after")
    parser.add_argument("--cohort", type=Path, help="a slide folder to measure instead of a generated cohort")
    args = parser.parse_args(argv)
    from automil_deep.training import thread_count

    threads = args.threads or thread_count()
    os.environ["OMP_NUM_THREADS"] = str(threads)  # the fit's share: fit_network's seeded_torch reads it
    params = {"max_instances": args.max_instances, "batch_size": args.batch_size, "hidden": args.hidden,
              "random_state": 0}
    with tempfile.TemporaryDirectory(prefix="automil-epoch-floor-", dir=args.out) as scratch:
        start = time.perf_counter()
        bags, run_file = write_run_file(Path(scratch), args.slides, args.patches, args.features, args.cohort)
        print(f"cohort: {bags.n_bags} slides of {bags.sizes.min()}-{bags.sizes.max()} patches x {bags.n_features} "
              f"{bags.X.dtype}, {run_file.stat().st_size / 1e9:.2f} GB run file, written in "
              f"{time.perf_counter() - start:.0f} s")
        drop_from_cache(run_file, bags.X)
        disk, cache = read_speed(run_file, from_disk=True), read_speed(run_file, from_disk=False)
        rows = args.batch_size * args.max_instances
        before = matmul_throughput(rows, bags.n_features, args.hidden, threads)
        epochs = {}
        for prefetch in (1, 0):
            drop_from_cache(run_file, bags.X)
            epochs["disk", prefetch] = measured_epochs(bags, args.learner, params, 1, prefetch)
        read_speed(run_file, from_disk=False)  # every page cached
        for prefetch in (1, 0):
            epochs["cache", prefetch] = measured_epochs(bags, args.learner, params, args.epochs, prefetch)
        after = matmul_throughput(rows, bags.n_features, args.hidden, threads)
        flops = max(before, after)  # the floor: the faster of the two, on a machine others may share
        print(f"read: page cache {cache / 1e9:.2f} GB/s, disk {disk / 1e9:.2f} GB/s (preadv of 16 MB pieces; "
              f"disk after fdatasync + POSIX_FADV_DONTNEED)")
        print(f"projection {bags.n_features} x {args.hidden} float32 on {rows} rows, {threads} thread(s): "
              f"{before / 1e9:.1f} GFLOP/s before the epochs, {after / 1e9:.1f} after; the floor takes "
              f"{flops / 1e9:.1f}")
        sampled = int(np.minimum(bags.sizes, args.max_instances).sum())  # the patches an epoch reads
        slides, patches, width = args.shape
        shapes = [("measured", sampled, bags.n_features),
                  (f"--shape {slides} x {patches} x {width}", slides * min(patches, args.max_instances), width)]
        for name, rows_read, features in shapes:
            for dtype, size in (("float32", 4), ("float16", 2)):
                for where, speed in (("cache", cache), ("disk", disk)):
                    total, reading, projecting = floor_seconds(rows_read, features, args.hidden, size, speed, flops)
                    print(f"floor {name} cohort ({rows_read} patches sampled) {dtype} from {where}: {total:.2f} s "
                          f"(read {reading:.2f} + project {projecting:.2f})")
        for (where, prefetch), seconds in epochs.items():
            floor = floor_seconds(sampled, bags.n_features, args.hidden, bags.X.dtype.itemsize,
                                  cache if where == "cache" else disk, flops)[0]
            count = "1 epoch, the file dropped first" if where == "disk" else f"mean of {args.epochs}"
            print(f"{args.learner} epoch from the {where}, {WAYS[prefetch]} ({count}): {seconds:.2f} s, "
                  f"{seconds / floor:.2f} x the {where} floor")

if __name__ == "__main__":
    sys.exit(main())
