"""Reading the benchmark text files: musk2 (4.4 MB) well under a second (docs/benchmarks.md, "Reading the
benchmark files"). The array layouts at 10^6 x 128 are left to ``read_formats.py --arrays`` (a 512 MB set)."""

import os
import tomllib
from pathlib import Path

import pytest

from automil.data.readers import read_bags


def test_musk2_text_file_reads_within_1_second(timed):
    root = Path(os.environ["AUTOMIL_DATA_DIR"])
    if not (root / "MANIFEST.toml").exists():
        pytest.skip(f"no benchmark data in {root}")
    path = root / tomllib.loads((root / "MANIFEST.toml").read_text())["datasets"]["musk2"]["files"][0]
    seconds = timed("read musk2", lambda: read_bags(path), rounds=5)
    assert seconds < 1.0, f"musk2: {seconds:.2f} s"
