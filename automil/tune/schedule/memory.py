"""The memory budget of a run (``--memory``): a learner whose fit on every bag is estimated above it is not
started, and its row says what it would need.

The estimate is plain: a fit holds its training bags standardized (one copy of their instances, in their
dtype) and the learner's own working set, which the learner declares as a multiple of those instances
(``LearnerSpec.memory_factor``), plus a worker process's own memory. The largest fit of a run is on every bag
(the chosen model's), so a learner is judged on that one, before any of its fits starts. A learner that
streams its bags (``accepts_streamed``) holds no copy of them: a block of bags read at a time (at least the
largest bag, in float64) with its working set as the same multiple of that block, and a few vectors per bag.
A learner whose memory grows with the square of a bag (``LearnerSpec.pair_bytes``) adds that many bytes per pair
of instances of the largest bag: the bag it predicts alone.
"""

from __future__ import annotations

import os

from automil.evaluation.standardized import streams
from automil.streamed_bags import BLOCK_BYTES, read_dtype

__all__ = ["PROCESS_BYTES", "default_memory", "machine_memory", "instance_bytes", "held_bytes", "fit_bytes",
           "pair_bytes", "over_budget"]

# A fit worker's own resident memory before it holds any data: Python, numpy, scikit-learn, a learner's
# library (measured 250 to 400 MB on the built-in learners; torch is most of the top of that range).
PROCESS_BYTES = 400 * 2**20
# What --memory leaves to the rest of the machine by default: the run's main process, the system, and the
# page cache the mapped instances are read through; a tenth of the memory, and never less than 1 GiB.
MARGIN_SHARE, MIN_MARGIN = 0.1, 2**30
# Vectors of n_features a streaming learner keeps per bag: bag-stats's four statistics.
BAG_VECTORS = 4


def machine_memory() -> int:
    """The bytes this process may use: the machine's memory, or the cgroup's limit when lower (a container)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = open("/sys/fs/cgroup/memory.max").read().strip()
    except OSError:
        return total
    return min(total, int(limit)) if limit.isdigit() else total


def default_memory() -> int:
    """``--memory`` when not given: what the machine has, less a margin."""
    total = machine_memory()
    return total - max(MIN_MARGIN, int(MARGIN_SHARE * total))


def instance_bytes(bags) -> int:
    """The bytes of the bags' instances as a fit reads them (a sparse matrix's stored values and indices)."""
    X = bags.X
    if bags.is_sparse:
        return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
    return int(X.shape[0]) * int(X.shape[1]) * read_dtype(X.dtype).itemsize  # float16 is fitted in float32


def held_bytes(spec, bags) -> int:
    """The instances a fit of ``spec`` on every bag holds at once: all of them, or, for a learner that streams
    dense bags, a block (at least the largest bag, in float64)."""
    if bags.is_sparse or not streams(spec.estimator):
        return instance_bytes(bags)
    return max(BLOCK_BYTES, 8 * int(bags.sizes.max()) * bags.n_features)


def fit_bytes(spec, bags) -> int:
    """The estimated memory of one fit of the learner ``spec`` on every bag of ``bags``: the instances it holds
    and its working set (``spec.memory_factor`` times them), a few vectors per bag when it streams, and a
    worker process."""
    held = int((1 + spec.memory_factor) * held_bytes(spec, bags)) + PROCESS_BYTES + pair_bytes(spec, bags)
    if bags.is_sparse or not streams(spec.estimator):
        return held
    return held + BAG_VECTORS * 8 * bags.n_bags * bags.n_features


def pair_bytes(spec, bags) -> int:
    """The bytes of a learner whose memory grows with the square of a bag, for the pairs of instances of the
    largest bag of ``bags`` (0 for the others)."""
    return int(spec.pair_bytes * int(bags.sizes.max()) ** 2) if spec.pair_bytes and bags.n_bags else 0


def over_budget(spec, bags, memory: int) -> str | None:
    """Why the learner ``spec`` is not started on ``bags`` under the budget of ``memory`` bytes; ``None``
    when its estimated fit fits."""
    need = fit_bytes(spec, bags)
    if need <= memory:
        return None
    pairs = pair_bytes(spec, bags)
    square = f", {_size(pairs)} for the pairs of instances of its largest bag" if pairs else ""
    return (f"a fit on every bag needs about {_size(need)} ({1 + spec.memory_factor:g} x the "
            f"{_size(held_bytes(spec, bags))} of instances it holds{square}, and a worker process), above the "
            f"{_size(memory)} a fit may take under --memory: not started")


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n / 1e3:.0f} kB"
