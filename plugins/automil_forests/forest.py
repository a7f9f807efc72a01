"""What every forest here shares: parameter resolution, per-tree seeds, growing trees on threads (as many as
the fit's time allows), and the flat storage of a whole forest (its trees' node arrays concatenated)."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral, Real

import numpy as np

from automil import BagClassifier, time_left

# what follows the growing scores about twice the training bags with every tree: the out-of-bag threshold on
# the training bags, and the fit's predictions (a test fold is smaller than its training bags)
SCORED_AFTER = 2.0


def resolve_max_features(max_features, n_features: int) -> int:
    """Features searched per node: ``"sqrt"`` is ``round(sqrt(d))`` (11, 12.4), ``"log2"`` is
    ``round(log2(d))``, a float in (0, 1] a fraction of d, an int a count, ``None`` all; at least 1."""
    if max_features is None:
        return n_features
    if isinstance(max_features, str):
        if max_features == "sqrt":
            return int(np.clip(round(np.sqrt(n_features)), 1, n_features))
        if max_features == "log2":
            return int(np.clip(round(np.log2(n_features)), 1, n_features))
    elif isinstance(max_features, Integral) and not isinstance(max_features, bool):
        if 1 <= max_features <= n_features:
            return int(max_features)
    elif isinstance(max_features, Real) and 0.0 < max_features <= 1.0:
        return int(np.clip(round(max_features * n_features), 1, n_features))
    raise ValueError(f"max_features={max_features!r} is invalid for {n_features} features: use 'sqrt', "
                     f"'log2', None, a fraction in (0, 1] or an integer in [1, {n_features}]")


def resolve_max_depth(max_depth) -> int:
    """``None`` (or BLRT.jl's ``-1``) is unlimited, coded ``-1`` for the tree builders."""
    if max_depth is None or (isinstance(max_depth, Integral) and max_depth == -1):
        return -1
    if isinstance(max_depth, Integral) and not isinstance(max_depth, bool) and max_depth >= 1:
        return int(max_depth)
    raise ValueError(f"max_depth={max_depth!r} is invalid: use None (unlimited) or an integer >= 1")


def check_int(name: str, value, low: int) -> int:
    """``value`` as an int, or ``ValueError`` naming the parameter."""
    if isinstance(value, Integral) and not isinstance(value, bool) and value >= low:
        return int(value)
    raise ValueError(f"{name}={value!r} is invalid: expected an integer >= {low}")


def resolve_n_jobs(n_jobs) -> int:
    """Worker threads: ``None`` is 1, ``-1`` every core."""
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, Integral) and not isinstance(n_jobs, bool) and n_jobs != 0:
        return int(n_jobs) if n_jobs > 0 else max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))
    raise ValueError(f"n_jobs={n_jobs!r} is invalid: use None, a positive integer or -1 (every core)")


def seed_sequence(random_state) -> np.random.SeedSequence:
    """The root of every random draw of one fit (1.6): an int seeds it, ``None`` draws fresh entropy, a
    numpy ``Generator`` or ``RandomState`` gives one integer."""
    if random_state is None or isinstance(random_state, Integral):
        return np.random.SeedSequence(random_state)
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(2**63)))
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(int(random_state.randint(2**31)))
    raise ValueError(f"random_state={random_state!r} is invalid: use None, an integer or a numpy generator")


def tree_seeds(random_state, n_trees: int) -> list[tuple[np.random.Generator, int]]:
    """For every tree, independent children of the fit's seed: a generator for its bootstrap and an
    integer for the numba generator of its feature and rule draws. Tree ``t`` gets the same seeds
    whatever the number of threads, so forests do not depend on ``n_jobs``."""
    seeds = []
    for child in seed_sequence(random_state).spawn(n_trees):
        sample_seed, draw_seed = child.spawn(2)
        seeds.append((np.random.default_rng(sample_seed), int(draw_seed.generate_state(1)[0])))
    return seeds


def map_threads(function, items, n_jobs: int) -> list:
    """``[function(item) for item in items]`` on ``n_jobs`` threads, in order. The work is in numba
    functions compiled with ``nogil=True``, so threads really run on separate cores."""
    items = list(items)
    if n_jobs == 1 or len(items) <= 1:
        return [function(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(n_jobs, len(items))) as pool:
        return list(pool.map(function, items))


def grow_in_time(grow, seeds: list, n_jobs: int, score_one) -> list:
    """``map_threads(grow, seeds, n_jobs)``, or where the driver gives the fit a time
    (:func:`automil.time_left`), the trees of the first seeds that end in it: a thread starts tree ``k`` only
    when growing it, at the mean seconds of the trees grown, and then scoring :data:`SCORED_AFTER` x the
    training bags with ``k + 1`` trees, at the seconds ``score_one(first_tree)`` took, would end in time.
    Why: a forest stopped at its time by a kill has nothing, one stopped here keeps its trees; and trees
    ``0..k`` are those of the same fit with ``n_estimators=k + 1``, so a refit with that count reproduces it."""
    left = time_left()
    if left is None:
        return map_threads(grow, seeds, n_jobs)
    end = time.monotonic() + left
    trees, grown_seconds = [None] * len(seeds), []
    lock, started, score_each = threading.Lock(), 0, None

    def work():
        nonlocal started, score_each
        while True:
            with lock:
                k = started
                if k == len(seeds) or (score_each is not None and time.monotonic() + np.mean(grown_seconds)
                                       + SCORED_AFTER * (k + 1) * score_each > end):
                    return
                started += 1
            begun = time.monotonic()
            trees[k] = grow(seeds[k])
            grown = time.monotonic() - begun
            if k == 0:  # the first tree's scoring times what follows the growing
                score_one(trees[0])
            with lock:
                grown_seconds.append(grown)
                if k == 0:
                    score_each = time.monotonic() - begun - grown

    threads = max(1, min(n_jobs, len(seeds)))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for thread in [pool.submit(work) for _ in range(threads)]:
            thread.result()
    return trees[:started]


def time_limited(n_trees: int, n_estimators: int) -> dict:
    """A forest's ``time_limited_params_``: the tree count a refit grows to reproduce a forest that ran out
    of time (the driver stores it over the trial's parameters), nothing for a whole forest."""
    return {"n_estimators": n_trees} if n_trees < n_estimators else {}


def stack_trees(trees: list[tuple]) -> tuple:
    """Concatenate trees ``(feature, threshold, left, right, value, *more)`` into one forest with the
    same fields plus ``roots`` (each tree's root node); child indices are shifted to the global ones."""
    sizes = np.array([len(tree[0]) for tree in trees], dtype=np.int64)
    roots = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    fields = [np.concatenate(column) for column in zip(*trees, strict=True)]
    shift = np.repeat(roots, sizes)
    for child in (2, 3):
        fields[child] = np.where(fields[child] >= 0, fields[child] + shift, -1)
    return (*fields, roots)


def bag_chunks(offsets: np.ndarray, n_chunks: int) -> list[tuple[int, int]]:
    """Split the bags into about ``n_chunks`` runs of consecutive bags with similar instance counts."""
    n_bags = len(offsets) - 1
    cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], n_chunks + 1)[1:-1])
    bounds = np.unique(np.concatenate(([0], np.clip(cuts, 0, n_bags), [n_bags])))
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def predict_in_chunks(function, X: np.ndarray, offsets: np.ndarray, n_jobs: int) -> np.ndarray:
    """``function(X_part, offsets_part)`` over runs of bags on threads, stacked: bag predictions use
    both cores like the fits do."""
    def run(chunk):
        a, b = chunk
        return function(X[offsets[a]:offsets[b]], offsets[a:b + 1] - offsets[a])

    return np.concatenate(map_threads(run, bag_chunks(offsets, n_jobs), n_jobs))


class TreeEnsemble(BagClassifier):
    """Base of the tree learners: probabilities are the forest's class vectors, and the decision
    function is the same probabilities (docs/algorithms.md 1.3). Subclasses set ``forest_`` in ``_fit`` and
    implement ``_forest_proba(X, offsets)``."""

    def _predict_proba(self, bags):
        return predict_in_chunks(self._forest_proba, bags.X, bags.offsets, resolve_n_jobs(self._n_jobs()))

    def _decision_function(self, bags):
        return self._predict_proba(bags)

    def _n_jobs(self):
        return getattr(self, "n_jobs", 1)
