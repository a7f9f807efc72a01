"""The folds of a run, by bag name, and ``folds.json``, the file that shares them (docs/protocol.md, "Shareable
folds"): a run writes it, and ``--folds-file`` makes another run use the same folds."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from automil.evaluation.folds import bag_folds, fold_digest, repeat_seeds, split_groups, untrainable

__all__ = ["RunFolds", "FoldFile", "read_fold_file", "bag_keys", "FORMAT", "VERSION"]

FORMAT = "automil-folds"
VERSION = 1
NAMES_SHOWN = 3  # bags named in an error about several


def bag_keys(bags) -> list[str]:
    """What ``folds.json`` calls every bag: its name, or its position (``"0"``, ``"1"``, ...) when the
    bags have no names or a name twice (then a name would not say which bag)."""
    names = bags.names
    if names is None or len(set(names)) < len(names):
        return [str(i) for i in range(bags.n_bags)]
    return [str(name) for name in names]


@dataclass(frozen=True, eq=False)
class RunFolds:
    """The folds of one run over the bags of ``dataset``.

    Attributes
    ----------
    dataset : str
    keys : tuple of str of shape (n_bags,)
        Every bag's name in ``folds.json`` (:func:`bag_keys`), in dataset order.
    tuning : ndarray of shape (n_bags,)
        The fold of every bag in the studies: what every trial is scored on, and the outer splits of
        nested cross-validation.
    repeats : tuple of ndarray of shape (n_bags,)
        The fold of every bag in each repeat of the repeated cross-validation of the best parameters.
    source : str or None
        The folds file they were read from; ``None``: drawn from the run's seed.
    groups : ndarray of shape (n_bags,) or None
        Every bag's group (its patient): no group has bags in two folds.
    """

    dataset: str
    keys: tuple[str, ...]
    tuning: np.ndarray
    repeats: tuple[np.ndarray, ...]
    source: str | None = None
    groups: np.ndarray | None = None

    @classmethod
    def drawn(cls, dataset: str, bags, n_folds: int, seed: int, n_repeats: int) -> RunFolds:
        """Stratified folds drawn from ``seed``: the studies' with ``seed`` itself, each repeat's with a
        seed derived from it (:func:`automil.evaluation.folds.repeat_seeds`), so every repeat is fresh."""
        repeats = tuple(bag_folds(bags.y, n_folds, s, bags.groups) for s in repeat_seeds(seed, n_repeats))
        return cls(dataset, tuple(bag_keys(bags)), bag_folds(bags.y, n_folds, seed, bags.groups), repeats,
                   groups=bags.groups)

    @property
    def n_folds(self) -> int:
        return int(self.tuning.max()) + 1

    @property
    def digest(self) -> str:
        """A fingerprint of the studies' folds and every repeat's."""
        return fold_digest(np.stack([self.tuning, *self.repeats]))

    def to_json(self) -> str:
        """``folds.json``: one line per fold, so that a reader sees which bags are tested together."""
        def folds(assignment, indent: str) -> str:
            return "[\n" + ",\n".join(indent + "  " + json.dumps(names) for names in self._names(assignment)) \
                + f"\n{indent}]"

        head = json.dumps({"format": FORMAT, "version": VERSION, "dataset": self.dataset, "folds": self.n_folds},
                          indent=2)[:-2]
        repeats = ",\n".join("    " + folds(r, "    ") for r in self.repeats)
        groups = "" if self.groups is None else ',\n  "groups": {\n' + ",\n".join(
            f"    {json.dumps(str(group))}: {json.dumps([self.keys[i] for i in np.flatnonzero(self.groups == group)])}"
            for group in dict.fromkeys(self.groups)) + "\n  }"
        return f'{head},\n  "tuning": {folds(self.tuning, "  ")},\n  "repeats": [\n{repeats}\n  ]{groups}\n}}\n'

    def _names(self, assignment: np.ndarray) -> list[list[str]]:
        return [[self.keys[i] for i in np.flatnonzero(assignment == fold)] for fold in range(self.n_folds)]


@dataclass(frozen=True)
class FoldFile:
    """What a ``folds.json`` holds, checked on its own: its test-bag names per fold for the studies
    (``tuning``) and for every repeat. :meth:`run_folds` checks them against the data."""

    path: str
    n_folds: int
    tuning: list[list[str]]
    repeats: list[list[list[str]]]
    groups: dict[str, list[str]] | None = None

    def run_folds(self, dataset: str, bags, n_repeats: int) -> RunFolds:
        """The folds over ``bags``, with the first ``n_repeats`` repeats; a ``ValueError`` naming the file
        when a name is not a bag of the data, a bag is in no test fold, a fold leaves a class (every event) out
        of its training bags, or a group (the data's, or the file's ``groups``) has bags in two folds (in any repeat
        of the file)."""
        keys = bag_keys(bags)
        index = {key: i for i, key in enumerate(keys)}
        groups = bags.groups if bags.groups is not None else self._file_groups(index)
        assignments = []
        every = [(self.tuning, "the tuning folds"), *((r, f"repeat {n}") for n, r in enumerate(self.repeats))]
        for folds, what in every:
            assignments.append(self._assignment(folds, what, index, dataset, bags.y))
            split = split_groups(assignments[-1], groups)
            if split is not None:
                held = sorted({int(f) for f in assignments[-1][groups == split]})
                raise ValueError(f"{self.path}: {what} split group {split!r} (its bags are in test folds "
                                 f"{', '.join(map(str, held))}); a group's bags must share one fold")
        return RunFolds(dataset, tuple(keys), assignments[0], tuple(assignments[1:n_repeats + 1]), self.path,
                        groups)

    def _file_groups(self, index: dict) -> np.ndarray | None:
        """Every bag's group as the file records it (a bag it does not name is a group of its own)."""
        if not self.groups:
            return None
        groups = np.array(["\0" + key for key in index], dtype=object)  # "\0": never a recorded group's name
        for group, names in self.groups.items():
            groups[[index[name] for name in names if name in index]] = group
        return groups

    def _assignment(self, folds: list[list[str]], what: str, index: dict, dataset: str, y) -> np.ndarray:
        assignment = np.full(len(index), -1, dtype=np.int64)
        for fold, names in enumerate(folds):
            unknown = [name for name in names if name not in index]
            if unknown:
                raise ValueError(f"{self.path}: fold {fold} of {what} names {_some(unknown)}, not "
                                 f"{'a bag' if len(unknown) == 1 else 'bags'} of {dataset}")
            assignment[[index[name] for name in names]] = fold
        missing = [key for key, i in index.items() if assignment[i] < 0]
        if missing:
            one = len(missing) == 1
            raise ValueError(f"{self.path}: {'bag' if one else 'bags'} {_some(missing)} of {dataset} "
                             f"{'is' if one else 'are'} in no test fold of {what}")
        for fold in range(self.n_folds):
            lacking = untrainable(y, assignment != fold)
            if lacking:
                raise ValueError(f"{self.path}: fold {fold} of {what} holds every bag {lacking}, so its training "
                                 "bags have none to learn it from")
        return assignment


def read_fold_file(path) -> FoldFile:
    """The folds a ``folds.json`` holds; a ``ValueError`` of one line naming the file and the problem.

    ``tuning`` may be left out: the studies then use the first repeat's folds (as a benchmark's published
    indices are used: tuned and reported on the same folds).
    """
    path = str(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as error:
        raise ValueError(f"cannot read the folds file {path}: {error.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not a JSON folds file ({error})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f'{path}: not an automil folds file (expected "format": "{FORMAT}")')
    if data.get("version") != VERSION:
        raise ValueError(f"{path}: folds file version {data.get('version')!r}; this automil reads version {VERSION}")
    n_folds = data.get("folds")
    if not isinstance(n_folds, int) or isinstance(n_folds, bool) or n_folds < 2:
        raise ValueError(f'{path}: "folds" must be the number of folds, 2 or more; got {n_folds!r}')
    repeats = data.get("repeats")
    if not isinstance(repeats, list) or not repeats:
        raise ValueError(f'{path}: "repeats" must be a list of repeats, at least one, each a list of {n_folds} '
                         "lists of test-bag names")
    tuning = data.get("tuning", repeats[0])
    for folds, what in [(tuning, "the tuning folds"), *((r, f"repeat {n}") for n, r in enumerate(repeats))]:
        _check_folds(path, folds, n_folds, what)
    groups = data.get("groups")
    if groups is not None and not (isinstance(groups, dict) and all(
            isinstance(names, list) and all(isinstance(n, str) for n in names) for names in groups.values())):
        raise ValueError(f'{path}: "groups" must map every group to the list of its bag names')
    return FoldFile(path, n_folds, tuning, repeats, groups)


def _check_folds(path: str, folds, n_folds: int, what: str) -> None:
    """One repeat (or the tuning folds): ``n_folds`` non-empty lists of names, no name twice."""
    if not isinstance(folds, list) or len(folds) != n_folds:
        found = f"{len(folds)} folds" if isinstance(folds, list) else f"a {type(folds).__name__}"
        raise ValueError(f'{path}: {what} has {found}, "folds" says {n_folds} (one list of test-bag names each)')
    seen = {}
    for fold, names in enumerate(folds):
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise ValueError(f"{path}: fold {fold} of {what} must be a list of bag names (strings)")
        if not names:
            raise ValueError(f"{path}: fold {fold} of {what} holds no bag")
        for name in names:
            if name in seen:
                where = f"folds {seen[name]} and {fold}" if seen[name] != fold else f"fold {fold} twice"
                raise ValueError(f"{path}: bag {name!r} is in test {where} of {what}")
            seen[name] = fold


def _some(names: list[str]) -> str:
    """The first few ``names``, quoted, and how many more."""
    more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
    return ", ".join(repr(name) for name in names[:NAMES_SHOWN]) + more
