"""Folds over bags: a bag's instances always land in one fold together.

Public (``automil.bag_folds``, ``automil.fold_splits``): learners with an inner cross-validation use them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bag_folds", "repeat_seeds", "fold_splits", "fold_digest", "bag_sample"]


def bag_folds(y, n_splits: int, seed: int) -> np.ndarray:
    """The fold (0..n_splits-1) of every bag: stratified by bag label, shuffled by ``seed``.

    Bags are the units, so a bag's instances always land in one fold together.
    """
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(y)
    if n_splits < 2:
        raise ValueError(f"folds must be at least 2, got {n_splits}")
    _, counts = np.unique(y, return_counts=True)
    if counts.min() < n_splits:
        raise ValueError(f"{n_splits}-fold cross-validation needs at least {n_splits} bags of every class; "
                         f"the smallest class has {counts.min()}")
    assignment = np.empty(len(y), dtype=np.int64)
    splitter = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    for fold, (_, test) in enumerate(splitter.split(np.zeros(len(y)), y)):
        assignment[test] = fold
    return assignment


def repeat_seeds(seed: int, n_repeats: int) -> list[int]:
    """Independent fold seeds for repeated cross-validation, derived from ``seed`` (docs/algorithms.md 1.6)."""
    return [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(n_repeats)]


def fold_splits(assignment, exclude=None) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(train, test)`` bag indices, one pair per fold, leaving fold ``exclude`` out of both.

    With ``exclude=i`` these are the inner splits of outer split ``i`` in nested cross-validation: the
    outer test fold reaches neither a training nor a test set while split ``i`` is tuned.
    """
    assignment = np.asarray(assignment)
    folds = [f for f in np.unique(assignment) if f != exclude]
    usable = assignment != exclude
    return [(np.flatnonzero(usable & (assignment != f)), np.flatnonzero(assignment == f)) for f in folds]


def bag_sample(y, bags, fraction: float, seed: int) -> np.ndarray:
    """A stratified sample of the ``bags`` (indices, labels ``y[bags]``): the same ``fraction`` of every
    class, at least two bags of each, so that every sample fits a classifier; sorted. Samples of one seed
    are nested (a smaller fraction's bags are among a larger one's)."""
    rng = np.random.default_rng(seed)
    bags = np.asarray(bags)
    labels = np.asarray(y)[bags]
    shuffled = [rng.permutation(bags[labels == c]) for c in np.unique(labels)]
    return np.sort(np.concatenate([of_class[:max(2, int(np.ceil(fraction * len(of_class))))]
                                   for of_class in shuffled]))


def fold_digest(assignment) -> str:
    """A short fingerprint of a fold assignment (stored with the study, shown in reports)."""
    import hashlib

    return hashlib.sha256(np.asarray(assignment, dtype=np.int64).tobytes()).hexdigest()[:16]
