"""MIDF, the multiple-instance deep forest: a cascade of MIRF and BLRT forests (docs/algorithms-beyond-svm.md 13)."""

from __future__ import annotations

import numpy as np

from automil import BagClassifier, Bags, bag_folds, fold_splits, time_limit
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
    """Multiple-instance deep forest: a cascade of levels, each level's instances extended with the
    previous level's per-instance class vectors (each instance passed as a bag of one).

    A level is ``n_folds`` fold models, each 2 MIRF + 2 BLRT forests trained on the bags of the other inner
    folds. A training instance's class vector for the next level comes from the fold model that did not
    train on it (``vectors``); a new bag's instance is given the mean over all fold models of the same
    level, so the cascade trains and predicts on out-of-sample vectors of the same models. The inner
    estimate of a level is the bag accuracy of every fold model on its held-out fold; the cascade grows
    while that estimate improves (``patience`` levels without a gain stop it) and keeps the levels up to
    the best one. A level's bag class vector is the mean over its
    fold models and forests.

    Parameters
    ----------
    n_estimators : int, default=17
        Trees in each of the four forests of a fold model. A level predicts through all its fold models:
        the default's 3 x 4 x 17 = 204 trees are the paper's 4 forests x 50 trees per level.
    n_folds : int, default=3
        Inner folds (lowered to the smallest class count; below 2, one level of four forests on all bags).
    max_layers : int, default=10
        The most levels the cascade tries.
    patience : int, default=1
        Levels without a gain after which the cascade stops.
    tol : float, default=0.0
        A level gains when its inner accuracy beats the best so far by more than ``tol``.
    vectors : {"out_of_fold", "training_mean"}, default="out_of_fold"
        A training instance's class vector: from the one fold model that held its bag out (gcForest's
        code), or the mean over the ``n_folds - 1`` fold models that trained on it (the wording of the
        MIDF and gcForest papers). The latter are in-sample vectors: every held-out bag of the next level
        carries them, so the inner estimate of every level after the first is optimistic (100% on musk1)
        and picks the depth blindly (docs/accuracy-forests.md).
    random_state : int, numpy Generator or None, default=None
    n_jobs : int or None, default=None
        Threads for each forest.

    Attributes
    ----------
    layers_ : list of list of list of estimators
        ``n_layers_`` levels, each ``n_folds`` fold models of four fitted forests.
    n_layers_ : int
        The level with the best inner accuracy (first on ties).
    layer_scores_ : ndarray of shape (n_levels_tried,)
        Inner (held-out fold) bag accuracy of every level tried.
    classes_ : ndarray of shape (n_classes,)

    References
    ----------
    Ren, Hou & Jiang, "Deep forest for multiple instance learning", 2019; cascade mechanics after gcForest
    (Zhou & Feng, IJCAI 2017).
    """

    def __init__(self, n_estimators=17, n_folds=3, max_layers=10, patience=1, tol=0.0, vectors="out_of_fold",
                 random_state=None, n_jobs=None):
        self.n_estimators = n_estimators
        self.n_folds = n_folds
        self.max_layers = max_layers
        self.patience = patience
        self.tol = tol
        self.vectors = vectors
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _fold_model(self, bags: Bags, seeds) -> list:
        """Four forests (13.1), each seeded by its own child seed, fitted on ``bags``, every tree grown: a
        driver's time for the fit (:func:`automil.time_left`) is the cascade's, not its forests'."""
        with time_limit(None):
            return [kind(n_estimators=self.n_estimators, random_state=int(seed.generate_state(1)[0]),
                         n_jobs=self.n_jobs).fit(bags)
                    for kind, seed in zip(LEVEL, seeds.spawn(len(LEVEL)), strict=True)]

    def _fit(self, bags, y):
        check_int("n_estimators", self.n_estimators, 1)
        max_layers = check_int("max_layers", self.max_layers, 1)
        patience = check_int("patience", self.patience, 1)
        n_folds = min(check_int("n_folds", self.n_folds, 2), int(np.bincount(y).min()))
        if self.vectors not in ("out_of_fold", "training_mean"):
            raise ValueError(f"vectors={self.vectors!r} is invalid: use 'out_of_fold' or 'training_mean'")
        out_of_fold = self.vectors == "out_of_fold"
        K = len(self.classes_)
        fold_seed, level_seed = seed_sequence(self.random_state).spawn(2)
        folds = None
        if n_folds >= 2:
            try:  # over the bags' groups when they have them: a patient's slides in one inner fold
                folds = fold_splits(bag_folds(y, n_folds, int(fold_seed.generate_state(1)[0]), bags.groups))
            except ValueError:  # too few groups for the inner folds: as with too few bags, below
                folds = None
        if folds is None:  # 13.3: too few bags of a class for inner folds: one level on all bags
            self.layers_ = [[self._fold_model(bags, level_seed)]]
            self.n_layers_, self.layer_scores_ = 1, np.array([])
            return
        X, layers, scores = bags.X, [], []
        best, since_best = -np.inf, 0
        for seeds in level_seed.spawn(max_layers):
            level_bags = Bags(X, bags.offsets, y)
            bag_votes = np.zeros((bags.n_bags, K))
            vectors = np.zeros((bags.n_instances, len(LEVEL) * K))
            models = []
            for (train, test), fold_seeds in zip(folds, seeds.spawn(n_folds), strict=True):
                model = self._fold_model(level_bags.subset(train), fold_seeds)
                models.append(model)
                bag_votes[test] = _mean_proba(model, level_bags.subset(test), K)
                rows = level_bags.instance_rows(test if out_of_fold else train)  # train: in k - 1 folds
                vectors[rows] += _instance_vectors(model, X[rows], K)
            layers.append(models)
            scores.append(float(np.mean(np.argmax(bag_votes, axis=1) == y)))
            if scores[-1] > best + self.tol:
                best, since_best = scores[-1], 0
            else:
                since_best += 1
                if since_best >= patience:
                    break
            X = np.hstack((bags.X, vectors if out_of_fold else vectors / (n_folds - 1)))
        self.layer_scores_ = np.array(scores)
        self.n_layers_ = int(np.argmax(scores)) + 1
        self.layers_ = layers[:self.n_layers_]

    def _predict_proba(self, bags):
        K = len(self.classes_)
        X = bags.X
        for models in self.layers_[:-1]:
            X = np.hstack((bags.X, np.mean([_instance_vectors(model, X, K) for model in models], axis=0)))
        last = Bags(X, bags.offsets)
        return np.mean([_mean_proba(model, last, K) for model in self.layers_[-1]], axis=0)

    def _decision_function(self, bags):
        return self._predict_proba(bags)


def _mean_proba(model, bags: Bags, n_classes: int) -> np.ndarray:
    """A fold model's bag class vectors: the mean of its four forests'."""
    return np.mean([_proba(forest, bags, n_classes) for forest in model], axis=0)


def _instance_vectors(model, X: np.ndarray, n_classes: int) -> np.ndarray:
    """13.2: every instance as a bag of one through the four forests, their class vectors side by side."""
    singletons = _singletons(X)
    return np.hstack([_proba(forest, singletons, n_classes) for forest in model])
