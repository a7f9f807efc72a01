"""MIDF, the multiple-instance deep forest: a cascade of MIRF and BLRT forests (algorithms.md 13)."""

from __future__ import annotations

import numpy as np

from automil import BagClassifier, Bags, bag_folds, fold_splits
from automil_forests.blrt import BLRTClassifier
from automil_forests.forest import check_int, seed_sequence
from automil_forests.mirf import MIRFClassifier

# 13.1: every level holds these four forests, in this order
LEVEL = (MIRFClassifier, MIRFClassifier, BLRTClassifier, BLRTClassifier)


def _singletons(X: np.ndarray) -> Bags:
    """Every instance as a bag of one (13.2)."""
    return Bags(X, np.arange(len(X) + 1))


def _proba(forest, bags: Bags, n_classes: int) -> np.ndarray:
    """Class vectors with a column for every class, also those missing from a forest's training bags."""
    out = np.zeros((bags.n_bags, n_classes))
    out[:, forest.classes_] = forest.predict_proba(bags)
    return out


class MIDFClassifier(BagClassifier):
    """Multiple-instance deep forest: levels of 2 MIRF + 2 BLRT forests, each level's instances extended
    with the previous level's per-instance class vectors.

    A first cascade with k-fold out-of-fold class vectors picks the number of levels by validation
    accuracy; a second cascade with that many levels, trained on all bags, makes the predictions.

    Parameters
    ----------
    n_estimators : int, default=50
        Trees in each of the four forests of a level.
    n_folds : int, default=3
        Folds of the first cascade (lowered to the smallest class count).
    max_layers : int, default=10
        The most levels the first cascade tries.
    patience : int, default=1
        Levels without a gain after which the first cascade stops.
    tol : float, default=0.0
        A level gains when its accuracy beats the best so far by more than ``tol``.
    random_state : int, numpy Generator or None, default=None
    n_jobs : int or None, default=None
        Threads for each forest.

    Attributes
    ----------
    layers_ : list of list of estimators
        The second cascade: ``n_layers_`` levels of four fitted forests.
    n_layers_ : int
        ``L*``, the level of the first cascade with the best out-of-fold accuracy (first on ties).
    layer_scores_ : ndarray of shape (n_levels_tried,)
        Out-of-fold bag accuracy of every level of the first cascade.
    classes_ : ndarray of shape (n_classes,)

    References
    ----------
    Ren, Hou & Jiang, "Deep forest for multiple instance learning", 2019; cascade mechanics after gcForest
    (Zhou & Feng, IJCAI 2017).
    """

    def __init__(self, n_estimators=50, n_folds=3, max_layers=10, patience=1, tol=0.0, random_state=None,
                 n_jobs=None):
        self.n_estimators = n_estimators
        self.n_folds = n_folds
        self.max_layers = max_layers
        self.patience = patience
        self.tol = tol
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _forests(self, seeds):
        """One level's four unfitted forests, each seeded by its own child seed."""
        return [kind(n_estimators=self.n_estimators, random_state=int(seed.generate_state(1)[0]),
                     n_jobs=self.n_jobs) for kind, seed in zip(LEVEL, seeds, strict=True)]

    def _fit(self, bags, y):
        check_int("n_estimators", self.n_estimators, 1)
        max_layers = check_int("max_layers", self.max_layers, 1)
        patience = check_int("patience", self.patience, 1)
        n_folds = min(check_int("n_folds", self.n_folds, 2), int(np.bincount(y).min()))
        K = len(self.classes_)
        root = seed_sequence(self.random_state)
        fold_seed, cascade1_seed, cascade2_seed = root.spawn(3)

        # 13.3: cascade 1 picks L* from out-of-fold accuracy; its instance vectors augment the next level
        oof_vectors = []  # per level: out-of-fold class vectors of every training instance, (n, 4K)
        scores = []
        if n_folds >= 2:
            folds = fold_splits(bag_folds(y, n_folds, int(fold_seed.generate_state(1)[0])))
            level_seeds = cascade1_seed.spawn(max_layers)
            best, since_best = -np.inf, 0
            for level in range(max_layers):
                X = bags.X if level == 0 else np.hstack((bags.X, oof_vectors[-1]))
                level_bags = Bags(X, bags.offsets, y)
                bag_votes = np.zeros((bags.n_bags, K))
                vectors = np.zeros((bags.n_instances, len(LEVEL) * K))
                for (train, test), seeds in zip(folds, level_seeds[level].spawn(len(folds)), strict=True):
                    train_bags, test_bags = level_bags.subset(train), level_bags.subset(test)
                    test_rows = level_bags.instance_rows(test)
                    for j, forest in enumerate(self._forests(seeds.spawn(len(LEVEL)))):
                        forest.fit(train_bags)
                        bag_votes[test] += _proba(forest, test_bags, K)
                        vectors[test_rows, j * K:(j + 1) * K] = _proba(forest, _singletons(test_bags.X), K)
                oof_vectors.append(vectors)
                scores.append(float(np.mean(np.argmax(bag_votes, axis=1) == y)))
                if scores[-1] > best + self.tol:
                    best, since_best = scores[-1], 0
                else:
                    since_best += 1
                    if since_best >= patience:
                        break
        self.layer_scores_ = np.array(scores)
        self.n_layers_ = int(np.argmax(scores)) + 1 if scores else 1

        # 13.4: cascade 2 on all bags, level l augmented with cascade 1's vectors of level l - 1
        self.layers_ = []
        for level, seeds in enumerate(cascade2_seed.spawn(self.n_layers_)):
            X = bags.X if level == 0 else np.hstack((bags.X, oof_vectors[level - 1]))
            self.layers_.append([forest.fit(Bags(X, bags.offsets, y)) for forest in
                                 self._forests(seeds.spawn(len(LEVEL)))])

    def _predict_proba(self, bags):
        K = len(self.classes_)
        X = bags.X
        for level in self.layers_[:-1]:
            singletons = _singletons(X)
            X = np.hstack([bags.X] + [_proba(forest, singletons, K) for forest in level])
        last = Bags(X, bags.offsets)
        return np.mean([_proba(forest, last, K) for forest in self.layers_[-1]], axis=0)

    def _decision_function(self, bags):
        return self._predict_proba(bags)
