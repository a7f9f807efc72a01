"""How fast the readers load data: the benchmark text files (target: musk2, 4.4 MB, well under a second), and
a large float32 set as .npz, as a folder of .npy files and as a folder of .h5 files (target: 10^6 x 128 under
5 s).

Text: every file of the data directory's MANIFEST.toml, read a few times with ``automil.data.readers.read_bags``
(checksum not included); prints the best time, MB/s and the ratio to one second.

    AUTOMIL_DATA_DIR=../shared/datasets python benchmarks/read_formats.py [--repeat 5]

Arrays: writes one set of float32 bags of 50 to 500 instances in each layout into a temporary directory, then
loads each with ``automil.load_bags`` (detection, reading, validation, and the ``Bags`` it returns); prints the
best time, the size on disk and the ratio to 5 s. The files were just written, so they are read from the page
cache.

    python benchmarks/read_formats.py --arrays [--instances 1e6] [--features 128] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np

from automil import load_bags
from automil.data.readers import read_bags


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--arrays", action="store_true", help="time the array layouts instead of the text files")
    parser.add_argument("--instances", type=float, default=1e6)
    parser.add_argument("--features", type=int, default=128)
    args = parser.parse_args()
    if args.arrays:
        array_layouts(int(args.instances), args.features, args.repeat)
    else:
        text_files(args.repeat)


def best_seconds(read, repeat: int) -> float:
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        read()
        seconds.append(time.perf_counter() - start)
    return min(seconds)


def text_files(repeat: int):
    root = Path(os.environ.get("AUTOMIL_DATA_DIR", "../shared/datasets"))
    manifest = tomllib.loads((root / "MANIFEST.toml").read_text())["datasets"]
    print(f"{'file':52s} {'MB':>6s} {'best s':>7s} {'MB/s':>6s} {'s / 1 s':>8s}")
    for facts in manifest.values():
        path = root / facts["files"][0]
        best = best_seconds(lambda: read_bags(path), repeat)
        megabytes = path.stat().st_size / 1e6
        print(f"{facts['files'][0]:52s} {megabytes:6.2f} {best:7.3f} {megabytes / best:6.1f} {best:8.2f}")


def array_layouts(n_instances: int, n_features: int, repeat: int):
    rng = np.random.default_rng(0)
    sizes = rng.integers(50, 501, n_instances // 275 + 1)
    sizes = sizes[: np.searchsorted(np.cumsum(sizes), n_instances) + 1]
    sizes[-1] -= sizes.sum() - n_instances  # exactly n_instances rows
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    X = rng.standard_normal((n_instances, n_features), dtype=np.float32)
    y = np.arange(len(sizes)) % 2
    print(f"{n_instances} x {n_features} float32 ({X.nbytes / 1e6:.0f} MB) in {len(sizes)} bags")
    print(f"{'layout':22s} {'MB on disk':>10s} {'best s':>7s} {'s / 5 s':>8s}")
    with tempfile.TemporaryDirectory(prefix="automil-read-") as work:
        for layout, path in (("npz", write_npz(Path(work), X, offsets, y)),
                             ("folder of .npy", write_folder(Path(work) / "npy", X, offsets, y, ".npy")),
                             ("folder of .h5", write_folder(Path(work) / "h5", X, offsets, y, ".h5"))):
            bags = load_bags(path)
            assert bags.n_instances == n_instances and np.array_equal(bags[1], X[offsets[1]:offsets[2]])
            del bags
            best = best_seconds(lambda: load_bags(path), repeat)
            on_disk = sum(f.stat().st_size for f in ([path] if path.is_file() else path.iterdir())) / 1e6
            print(f"{layout:22s} {on_disk:10.0f} {best:7.2f} {best / 5:8.2f}")


def write_npz(work: Path, X, offsets, y) -> Path:
    path = work / "bags.npz"
    np.savez(path, X=X, offsets=offsets, y=y)
    return path


def write_folder(folder: Path, X, offsets, y, suffix: str) -> Path:
    import h5py

    folder.mkdir()
    names = [f"bag{b:05d}" for b in range(len(y))]
    (folder / "labels.csv").write_text("bag,label\n" + "".join(f"{n},{label}\n" for n, label in zip(names, y)))
    for name, start, stop in zip(names, offsets[:-1], offsets[1:]):
        if suffix == ".npy":
            np.save(folder / f"{name}.npy", X[start:stop])
        else:
            with h5py.File(folder / f"{name}.h5", "w") as f:
                f["features"] = X[start:stop]
    return folder


if __name__ == "__main__":
    main()
