"""Folds over bags: a bag's instances always land in one fold together.

Public (``automil.bag_folds``, ``automil.fold_splits``): learners with an inner cross-validation use them.
"""

from __future__ import annotations

import numpy as np

from automil.endpoints import strata, task_of

__all__ = ["bag_folds", "split_groups", "repeat_seeds", "fold_splits", "held_apart_split", "fold_digest", "bag_sample",
           "folds_for_size", "small_folds", "fold_sizes", "untrainable", "MIN_TEST_BAGS", "MIN_TEST_CLASS_BAGS",
           "FEWEST_FOLDS"]

# The fewest bags a test fold should hold, and of each class (of events, for survival). A fold's score moves in
# steps of a bag: on 5 bags one bag is 20 points of accuracy (BACC on 2 bags of a class: 25 points), so the
# pruner, the spread over the folds and a fold's AUC read noise; 8 bags with 2 of each class make a fold's BACC
# and AUC defined and a step of one bag at most 12.5 points of accuracy.
MIN_TEST_BAGS = 8
MIN_TEST_CLASS_BAGS = 2
# The fewest folds automil takes, even where test folds then hold fewer bags: an outer split of nested
# cross-validation tunes on the other k - 1 folds, each inner fit trained on (k - 2) / k of the bags, half of
# them at 4 folds (14 of 29) and a third at 3 (10 of 29), too few to rank parameters by.
FEWEST_FOLDS = 4


def bag_folds(y, n_splits: int, seed: int, groups=None) -> np.ndarray:
    """The fold (0..n_splits-1) of every bag: stratified by bag label (its stratum,
    :func:`automil.endpoints.strata`: the event and the tercile of time for survival, the target's quantile
    for regression), shuffled by ``seed``.

    Bags are the units, so a bag's instances always land in one fold together. With ``groups`` (one per
    bag, e.g. a patient's slides) a group's bags land in one fold together, stratified as far as the groups
    allow (scikit-learn's ``StratifiedGroupKFold``). Every split automil makes is drawn here.
    """
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

    y = np.asarray(y)
    if n_splits < 2:
        raise ValueError(f"folds must be at least 2, got {n_splits}")
    stratum = strata(y, n_splits)
    if groups is None:
        _, counts = np.unique(stratum, return_counts=True)
        if counts.min() < n_splits and task_of(y) != "classification":  # a stratum is that small in a small set
            raise ValueError(f"{n_splits}-fold cross-validation needs at least {n_splits} bags; there are {len(y)}")
        if counts.min() < n_splits:
            raise ValueError(f"{n_splits}-fold cross-validation needs at least {n_splits} bags of every class; "
                             f"the smallest class has {counts.min()}")
        splits = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed).split(np.zeros(len(y)), stratum)
    else:
        groups = np.asarray(groups)
        n_groups = len(np.unique(groups))
        if n_groups < n_splits:
            raise ValueError(f"{n_splits}-fold cross-validation over groups needs at least {n_splits} groups; "
                             f"the bags have {n_groups}")
        splitter = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
        splits = splitter.split(np.zeros(len(y)), stratum, groups)
    assignment = np.empty(len(y), dtype=np.int64)
    for fold, (_, test) in enumerate(splits):
        assignment[test] = fold
    if groups is not None:
        for fold in range(n_splits):
            lacking = untrainable(y, assignment != fold)
            if lacking:
                raise ValueError(f"{n_splits} folds over groups: fold {fold} holds every group {lacking}, so its "
                                 "training bags have none; use fewer folds")
    return assignment


def untrainable(y, training) -> str | None:
    """What the ``training`` bags (a mask over the bags labelled ``y``) lack that the others hold, in words to
    follow "every bag": ``"of class 1"`` (a class none of them has), ``"with an event"`` (survival: a risk is
    learned from events); ``None`` when nothing (regression: any bags will do)."""
    task = task_of(y)
    if task == "survival":
        return None if y["event"][training].any() else "with an event"
    if task == "regression":
        return None
    left_out = set(np.unique(y)) - set(np.unique(y[training]))
    return f"of class {sorted(left_out)[0]}" if left_out else None


def _counts(y) -> np.ndarray:
    """What a test fold must hold some of, counted over the bags labelled ``y``: the bags of each class, the
    events (survival: the concordance of a fold compares its events with the bags followed longer), or the
    bags (regression)."""
    task = task_of(y)
    if task == "survival":
        return np.array([np.count_nonzero(y["event"])])
    if task == "regression":
        return np.array([len(y)])
    return np.unique(np.asarray(y), return_counts=True)[1]


def folds_for_size(y, most: int, groups=None) -> int:
    """The folds of a cross-validation over bags labelled ``y`` (``groups``: one per bag) that automil chooses:
    ``most`` (its default), fewer where a test fold would hold fewer than ``MIN_TEST_BAGS`` bags or fewer than
    ``MIN_TEST_CLASS_BAGS`` of a class (of events, for survival), never fewer than ``FEWEST_FOLDS`` (unless a
    class, the events or the groups are fewer). Fewer folds, not repeated ones: the studies, the outer splits
    and ``folds.json`` hold one fold per bag, and the headline's repeated cross-validation already repeats them
    (docs/protocol.md, "Small sets").
    Deterministic: the data's size alone decides, so a rerun asks its studies for the same folds."""
    counts = _counts(y)
    wanted = min(most, len(y) // MIN_TEST_BAGS, int(counts.min()) // MIN_TEST_CLASS_BAGS)
    units = len(y) if groups is None else len(np.unique(np.asarray(groups)))
    return min(max(FEWEST_FOLDS, wanted), most, int(counts.min()), units)


def small_folds(y, n_splits: int) -> bool:
    """Whether some of ``n_splits`` stratified test folds over bags labelled ``y`` hold fewer than
    ``MIN_TEST_BAGS`` bags or fewer than ``MIN_TEST_CLASS_BAGS`` of a class (of events, for survival)."""
    counts = _counts(y)
    return len(y) // n_splits < MIN_TEST_BAGS or int(counts.min()) // n_splits < MIN_TEST_CLASS_BAGS


def fold_sizes(y, n_splits: int) -> str:
    """What ``n_splits`` stratified test folds over bags labelled ``y`` hold, in words."""
    counts, task = _counts(y), task_of(y)

    def between(n: int) -> str:
        return f"{n // n_splits}" if n % n_splits == 0 else f"{n // n_splits} to {-(-n // n_splits)}"

    if task == "regression":
        return f"test folds of {between(len(y))} bags"
    if task == "survival":
        return f"test folds of {between(len(y))} bags, {between(int(counts[0]))} events ({int(counts[0])} events)"
    return f"test folds of {between(len(y))} bags, {between(int(counts.min()))} of the smallest class " \
           f"({int(counts.min())} bags)"


def split_groups(assignment, groups) -> str | None:
    """The first group whose bags lie in more than one fold of ``assignment``, ``None`` when no group does."""
    if groups is None:
        return None
    groups = np.asarray(groups)
    order = np.argsort(groups, kind="stable")
    sorted_groups, sorted_folds = groups[order], np.asarray(assignment)[order]
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    lowest, highest = np.minimum.reduceat(sorted_folds, starts), np.maximum.reduceat(sorted_folds, starts)
    split = np.flatnonzero(lowest != highest)
    return None if split.size == 0 else str(sorted_groups[starts[split[0]]])


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
    class (stratum: :func:`automil.endpoints.strata`), at least two bags of each, so that every sample fits a
    model; sorted. Samples of one seed are nested (a smaller fraction's bags are among a larger one's). Only
    ever training bags: a sample is scored on folds made as every split is (:func:`bag_folds`, groups kept
    together)."""
    rng = np.random.default_rng(seed)
    bags = np.asarray(bags)
    labels = strata(np.asarray(y)[bags], MIN_TEST_CLASS_BAGS)
    shuffled = [rng.permutation(bags[labels == c]) for c in np.unique(labels)]
    return np.sort(np.concatenate([of_class[:max(2, int(np.ceil(fraction * len(of_class))))]
                                   for of_class in shuffled]))


def fold_digest(assignment) -> str:
    """A short fingerprint of a fold assignment (stored with the study, shown in reports)."""
    import hashlib

    return hashlib.sha256(np.asarray(assignment, dtype=np.int64).tobytes()).hexdigest()[:16]


def held_apart_split(assignment, outer: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The training, calibration and test bags of a held-apart fit on the tuning folds ``assignment``: the
    calibration bags are the first fold other than ``outer`` (stratified, and grouped by patient when the
    bags are, as every tuning fold), the test bags those of fold ``outer`` (none for a model), the training
    bags all others."""
    assignment = np.asarray(assignment)
    apart = assignment == min(set(np.unique(assignment).tolist()) - {outer})
    tested = np.zeros(len(assignment), dtype=bool) if outer is None else assignment == outer
    return np.flatnonzero(~apart & ~tested), np.flatnonzero(apart), np.flatnonzero(tested)
