"""The speed suite's shared pieces: one timer (pytest-benchmark's), and the best times kept for the checks
that compare two timings (a ratio) or several (a log-log slope)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("AUTOMIL_DATA_DIR", str(Path(__file__).resolve().parents[2] / "shared" / "datasets"))


@pytest.fixture(scope="session")
def best():
    """Name -> best seconds of every timing taken in this session."""
    return {}


@pytest.fixture
def timed(benchmark, best):
    """Times ``run()`` over ``rounds`` rounds with pytest-benchmark and keeps the best under ``name``; the
    best, not the mean, because the machines this runs on are shared (the least disturbed round)."""

    def time_it(name: str, run, rounds: int = 3, setup=None) -> float:
        benchmark.pedantic(run, setup=setup, rounds=rounds, iterations=1)
        best[name] = benchmark.stats.stats.min
        return best[name]

    return time_it


def kept(best: dict, *names: str) -> list[float]:
    """The best times of ``names``; skips the check when one was not measured (``-k`` chose a part)."""
    missing = [name for name in names if name not in best]
    if missing:
        pytest.skip(f"not timed in this session: {', '.join(missing)}")
    return [best[name] for name in names]


def log_log_slope(sizes, seconds) -> float:
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])
