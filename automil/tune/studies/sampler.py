"""The sampler a process tunes a study with (``--sampler``), seeded so that processes never replay each
other's proposals."""

from __future__ import annotations

import zlib

import numpy as np

from automil.tune.options import Sampler
from automil.tune.studies.plan import Plan

__all__ = ["seeded_sampler"]


def seeded_sampler(plan: Plan, name: str, index: int, n_existing: int):
    import optuna

    # Seeded by the run's seed and by what is already in the study, so a resumed or parallel process
    # does not replay the random start-up proposals of another one.
    seed = int(np.random.SeedSequence([plan.options.seed, index, n_existing, zlib.crc32(name.encode())])
               .generate_state(1)[0])
    if plan.options.sampler == Sampler.RANDOM:
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed)
