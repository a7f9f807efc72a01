"""Which rows of a bag a sampled read takes: a few contiguous runs of rows, not scattered ones.

A slide of 10,000 patches x 768 float32 features is 30 MB of the run's file; 512 patches drawn one row at a
time touch 512 places of it, and from disk the kernel's read-ahead around each turns the step into a read of
most of the slide. Drawn as a few runs they are a few sequential reads, and from the page cache a few copies.
Networks cutting a bag and learners sampling a bag's rows for statistics read their rows so.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RUNS", "run_positions"]

# Windows a cut bag is read as: 512 of a slide's patches are 8 windows of 64 rows, 192 KB each at 768
# float32 features (above the kernel's default read-ahead of 128 KB, so a read from disk is about 8 seeks a
# slide, not 512), in 8 places of the slide, so that a step still meets a small witness region about as often
# as 8 random places would. A bag cut to fewer instances than this draws them one row a window.
RUNS = 8


def run_positions(size: int, count: int, rng: np.random.Generator, runs: int = RUNS) -> np.ndarray:
    """``count`` distinct positions in ``range(size)``, increasing, as ``runs`` windows of near-equal lengths at
    random places of the bag taken as a ring: at most ``runs + 1`` contiguous runs of rows (one window may
    wrap past the bag's end), and every position drawn with the same chance, ``count / size`` (a bag's first
    and last instances as often as its middle ones). The windows are laid on a line of ``size`` with the
    ``size - count`` positions left split before, between and after them at ``runs`` cut points drawn
    uniformly, then the line is turned by a uniform shift. ``count >= size`` is every position."""
    if count >= size:
        return np.arange(size)
    runs = max(1, min(runs, count))
    lengths = np.full(runs, count // runs)
    lengths[:count % runs] += 1
    gaps = np.sort(rng.integers(0, size - count + 1, size=runs))  # the positions left before each window
    starts = gaps + np.concatenate(([0], np.cumsum(lengths)[:-1]))
    line = np.concatenate([np.arange(start, start + length) for start, length in zip(starts, lengths)])
    return np.sort((line + rng.integers(size)) % size)
