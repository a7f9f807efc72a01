"""How fast the readers parse the benchmark files (the target: musk2, 4.4 MB, well under a second).

Reads every file of the data directory's MANIFEST.toml a few times with ``automil.formats.read_bags``
(checksum not included) and prints the best time, MB/s and the ratio to one second.

    AUTOMIL_DATA_DIR=../shared/datasets python bench/read_formats.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import time
import tomllib
from pathlib import Path

from automil.formats import read_bags


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root = Path(os.environ.get("AUTOMIL_DATA_DIR", "../shared/datasets"))
    manifest = tomllib.loads((root / "MANIFEST.toml").read_text())["datasets"]
    print(f"{'file':52s} {'MB':>6s} {'best s':>7s} {'MB/s':>6s} {'s / 1 s':>8s}")
    for facts in manifest.values():
        path = root / facts["files"][0]
        seconds = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            read_bags(path)
            seconds.append(time.perf_counter() - start)
        best = min(seconds)
        megabytes = path.stat().st_size / 1e6
        print(f"{facts['files'][0]:52s} {megabytes:6.2f} {best:7.3f} {megabytes / best:6.1f} {best:8.2f}")


if __name__ == "__main__":
    main()
