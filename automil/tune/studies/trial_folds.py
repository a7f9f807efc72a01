"""What one trial fits and scores on: the cross-validation over the tuning folds, or, under the hold-out
protocol, one inner hold-out of a fifth of the tuning bags scored in blocks (``docs/protocol.md``, "One fit a
trial at scale")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from automil.endpoints import label_counts
from automil.evaluation.folds import bag_folds, fold_digest, fold_splits

__all__ = ["TrialFolds", "INNER_FIFTHS", "INNER_BLOCKS", "INNER_MIN_CLASS_BAGS", "inner_holdout", "inner_digest"]

# The inner hold-out is one of this many stratified parts of the tuning bags (a fifth): the fit trains on the
# other four, 4/5 of the tuning bags against 2/3 for each of 3 folds, at a third of their fits.
INNER_FIFTHS = 5
# Its bags are scored in this many stratified blocks, so that a trial's score has a spread that the budget,
# the ladder and the ensemble's cross-validated selection read as they read the folds of a cross-validation.
INNER_BLOCKS = 3
# The fewest bags of a class the fifth may hold. A fifth is scored on a fifth of the bags a cross-validation
# scores, and every learner on the same ones, so its noise is shared: on the 273 tuning bags of a 364-bag set
# (55 in the fifth) NSK's defaults scored 0.73 BACC on the fifth where each fold of a 3-fold CV of the same bags
# gave 0.54 to 0.55, and 10 of 14 learners scored 0.05 to 0.24 higher on it. From 100 of each class
# (200 bags: a standard error of BACC near 0.035) the fifth ranks on signal; below, trials cross-validate.
INNER_MIN_CLASS_BAGS = 100


@dataclass(frozen=True)
class TrialFolds:
    """A trial's fits, ``(train, test)`` bag indices, and the block of every bag they score (``blocks``, in
    :attr:`order`): under cross-validation a fit's test bags are one block, named by their fold; an inner
    hold-out's one fit scores several. A trial reports and keeps one score a block, and its out-of-fold
    scores in :attr:`order`."""

    fits: tuple[tuple[np.ndarray, np.ndarray], ...]
    blocks: np.ndarray

    @classmethod
    def cross_validation(cls, assignment, exclude: int | None = None) -> TrialFolds:
        """Every fold of ``assignment`` but ``exclude`` tested once, trained on the others."""
        fits = tuple(fold_splits(assignment, exclude=exclude))
        return cls(fits, np.asarray(assignment)[np.concatenate([test for _, test in fits])])

    @classmethod
    def held_out(cls, assignment, exclude: int, validation) -> TrialFolds:
        """One fit on the bags of ``assignment`` outside fold ``exclude`` and outside the inner hold-out,
        scoring the inner hold-out (``validation``: every bag's block, -1 outside it) block by block."""
        validation = np.asarray(validation)
        order = np.concatenate([np.flatnonzero(validation == b) for b in np.unique(validation[validation >= 0])])
        train = np.flatnonzero((np.asarray(assignment) != exclude) & (validation < 0))
        return cls(((train, order),), validation[order])

    @property
    def order(self) -> np.ndarray:
        """The scored bags, fit by fit: the order of a trial's out-of-fold scores."""
        return np.concatenate([test for _, test in self.fits])

    def fit_blocks(self) -> list[list[tuple[int, np.ndarray]]]:
        """For every fit, its blocks as ``(block, positions in that fit's test bags)``, in order."""
        out, start = [], 0
        for _, test in self.fits:
            blocks = self.blocks[start:start + len(test)]
            out.append([(int(b), np.flatnonzero(blocks == b)) for b in dict.fromkeys(blocks.tolist())])
            start += len(test)
        return out


def inner_holdout(y, assignment, exclude: int, seed: int, groups=None) -> np.ndarray | None:
    """The inner hold-out of the tuning bags (those of ``assignment`` outside fold ``exclude``): every bag's
    block (0 to ``INNER_BLOCKS - 1``) in one stratified fifth of them, -1 for all other bags; groups kept
    together as in every split. ``None`` when the tuning bags are too few for a fifth scored in blocks (fewer
    than ``INNER_MIN_CLASS_BAGS`` bags of a class, events or censored bags in it, or groups too few to split):
    trials then cross-validate the tuning folds."""
    y = np.asarray(y)
    tuning = np.flatnonzero(np.asarray(assignment) != exclude)
    group_of = None if groups is None else np.asarray(groups)
    try:
        fifth = tuning[bag_folds(y[tuning], INNER_FIFTHS, seed, None if group_of is None else group_of[tuning]) == 0]
        counts = label_counts(y[fifth])  # of each class; the events and censored bags; the bags
        if len(counts) < len(label_counts(y[tuning])) or counts.min() < INNER_MIN_CLASS_BAGS:
            return None
        blocks = bag_folds(y[fifth], INNER_BLOCKS, seed, None if group_of is None else group_of[fifth])
    except ValueError:  # the bags cannot be split so: the caller keeps the cross-validation
        return None
    validation = np.full(len(y), -1, dtype=np.int64)
    validation[fifth] = blocks
    return validation


def inner_digest(validation) -> str | None:
    """A fingerprint of an inner hold-out (stored with the studies that trial on it); ``None`` for none."""
    return None if validation is None else fold_digest(validation)
