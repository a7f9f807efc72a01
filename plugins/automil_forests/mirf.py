"""MIRF, the random forest of ID3-MI trees (docs/algorithms-beyond-svm.md 10 and 11)."""

from __future__ import annotations

import numpy as np

from automil import witness
from automil_forests.forest import (
    TreeEnsemble,
    check_int,
    grow_in_time,
    resolve_max_depth,
    resolve_max_features,
    resolve_n_jobs,
    stack_trees,
    time_limited,
    tree_seeds,
)
from automil_forests.id3mi_tree import CHILDREN, INSTANCES, NODE, grow_id3mi_tree, id3mi_bag_proba, id3mi_instance_proba
from automil_forests.instance_trees import grow_instance_tree

# the gain's child weights by name: n(child)/n(S), c(child)/(c(L)+c(R)), and docs/algorithms-beyond-svm.md 10.2's
# c(child)/c(S) (see split_weights in MIRFClassifier)
SPLIT_WEIGHTS = {"instances": INSTANCES, "children": CHILDREN, "node": NODE}
TREES = ("id3-mi", "instance")
NO_SKIP = np.zeros((0, 0), dtype=np.bool_)


def oob_threshold(scores: np.ndarray, y: np.ndarray) -> float:
    """The cut on out-of-bag positive scores with the best bag accuracy (``P > t`` is positive); among
    equally good cuts the median one (the middle of the best range). Bags without an out-of-bag score
    are ignored. One sort: a cut after the i lowest scores is right on the negatives below it and the
    positives above it."""
    known = ~np.isnan(scores)
    order = np.argsort(scores[known], kind="stable")
    s, positive = scores[known][order], y[known][order] == 1
    correct = (np.concatenate(([0], np.cumsum(~positive)))
               + positive.sum() - np.concatenate(([0], np.cumsum(positive))))
    cuts = np.concatenate(([s[0] / 2], (s[:-1] + s[1:]) / 2, [(s[-1] + 1) / 2]))
    between_values = np.concatenate(([True], s[:-1] < s[1:], [True]))
    best = cuts[between_values & (correct == correct[between_values].max())]
    return float(np.clip(best[(len(best) - 1) // 2], 1e-9, 1 - 1e-9))


def move_threshold(proba: np.ndarray, t: float) -> np.ndarray:
    """Map binary class vectors so that the positive score ``t`` becomes 0.5 (piecewise linear and
    increasing): the arg-max then predicts positive exactly when ``P > t``."""
    p = proba[:, 1]
    moved = np.where(p <= t, p / (2 * t), 0.5 + (p - t) / (2 * (1 - t)))
    return np.column_stack((1 - moved, moved))


def grow_id3mi_forest(bags, y, n_classes, *, n_estimators, bootstrap, max_features, max_depth,
                      min_samples_split, split_weights, random_state, n_jobs, tree="id3-mi"):
    """Grow ``n_estimators`` ID3-MI trees (or with ``tree="instance"`` CART trees on instances labelled by
    their bag), or the first of them that end in the fit's time (:func:`grow_in_time`); returns the stacked
    forest and each tree's bags (the bootstrap sample of N bags drawn with replacement, or all bags in
    order), shape (T, N)."""
    m = resolve_max_features(max_features, bags.n_features)
    depth = resolve_max_depth(max_depth)
    min_split = check_int("min_samples_split", min_samples_split, 1)
    if split_weights not in SPLIT_WEIGHTS:
        raise ValueError(f"split_weights={split_weights!r} is invalid: use one of {tuple(SPLIT_WEIGHTS)}")
    if tree not in TREES:
        raise ValueError(f"tree={tree!r} is invalid: use one of {TREES}")
    seeds = tree_seeds(random_state, n_estimators)

    def score_one(grown):
        id3mi_bag_proba(bags.X, bags.offsets, *stack_trees([grown[0]]), NO_SKIP)

    if tree == "instance":
        def grow_instance(seeds):
            rng, draw_seed = seeds
            sample = rng.integers(0, bags.n_bags, bags.n_bags) if bootstrap else np.arange(bags.n_bags)
            drawn, times = np.unique(sample, return_counts=True)
            return grow_instance_tree(bags, y, n_classes, drawn, times, max_features=m, max_depth=depth,
                                      min_samples_split=min_split, seed=draw_seed), sample

        grown = grow_in_time(grow_instance, seeds, n_jobs, score_one)
        return stack_trees([t for t, _ in grown]), np.stack([sample for _, sample in grown])
    sizes = bags.sizes
    XT = np.ascontiguousarray(bags.X.T)  # feature-major: a node's sweep reads one contiguous row
    order = np.argsort(XT, axis=1, kind="stable")
    rank = np.empty(order.shape, dtype=np.int32)
    np.put_along_axis(rank, order, np.arange(XT.shape[1], dtype=np.int32), axis=1)

    def grow(seeds):
        rng, draw_seed = seeds
        sample = rng.integers(0, bags.n_bags, bags.n_bags) if bootstrap else np.arange(bags.n_bags)
        # 11: a bag drawn twice is two bags; the tree counts it twice from one copy of its instances
        drawn, times = np.unique(sample, return_counts=True)
        rows = bags.instance_rows(drawn)
        inst_bag = np.repeat(np.arange(len(drawn)), sizes[drawn])
        tree = grow_id3mi_tree(XT, rank, rows, inst_bag, y[drawn], times, n_classes, m, depth,
                               min_split, SPLIT_WEIGHTS[split_weights], draw_seed)
        return tree, sample

    grown = grow_in_time(grow, seeds, n_jobs, score_one)
    return stack_trees([tree for tree, _ in grown]), np.stack([sample for _, sample in grown])


class MIRFClassifier(TreeEnsemble):
    """Multi-instance random forest: ID3-MI trees on bootstrap samples of bags with random features.

    Parameters
    ----------
    n_estimators : int, default=100
    max_features : {"sqrt", "log2"}, int, float or None, default="sqrt"
        Features drawn without replacement at each node: ``round(sqrt(d))``, ``round(log2(d))``, a count,
        a fraction of d, or all (``None``). A node whose drawn features are all constant is a leaf.
    max_depth : int or None, default=None
        ``None`` grows every tree to purity.
    min_samples_split : int, default=2
    bootstrap : bool, default=True
        Each tree sees N bags drawn with replacement; otherwise all bags.
    split_weights : {"instances", "children", "node"}, default="instances"
        Weights of the children's entropies (of their bags' classes) in the gain. ``"node"`` is
        docs/algorithms-beyond-svm.md 10.2, ``c(child) / c(S)``: the weights sum to more than 1 when bags are
        cut, so the split that isolates the positive bags' witnesses (every bag keeps instances on the other side)
        loses to zero-gain splits peeling off one instance, and trees never find the witnesses.
        ``"children"`` divides by ``c(L) + c(R)`` instead, so the witness split wins, but peeling one
        instance off a node of c bags still gains ``Info(S) / (c + 1)``: where every bag has instances
        everywhere (SIVAL's image regions), trees grow as chains 200 deep. ``"instances"`` weighs a child
        by its share of the node's instances, as ID3 does, at the same candidate thresholds (where a bag
        enters or leaves a child): peeling one instance is worth ``Info(S) / n``, and the trees are a
        third as deep (65 levels on SIVAL, scikit-learn's 32).
    tree : {"id3-mi", "instance"}, default="id3-mi"
        ``"instance"`` grows scikit-learn's CART trees (Gini) on the instances of each bootstrap sample
        instead, every instance labelled with its bag's label (``split_weights`` then unused): with 300
        trees the instance-level forest MIRF generalizes, kept as a point of the search space so that a
        tuned MIRF is not below it. Scored, thresholded and explained like the ID3-MI trees.
    threshold : "oob" or float, default="oob"
        Binary only: a bag is positive when its score exceeds this. The score is the maximum over the
        bag's instances of their forest-mean positive leaf probability (10.4's rule on the forest's
        instance scores; docs/algorithms-beyond-svm.md 11 averages the trees' maxima instead, which the pure leaves of
        the positive bags' noise instances push to 1 for every bag). Noise instances still score about
        the share of positive bags, so 0.5 calls most bags positive; ``"oob"`` picks the threshold with
        the best out-of-bag bag accuracy. Probabilities are remapped so that the threshold sits at 0.5.
    random_state : int, numpy Generator or None, default=None
        Seeds every tree independently (``SeedSequence.spawn``), so the forest does not depend on n_jobs.
    n_jobs : int or None, default=None
        Threads growing trees and predicting (``-1``: every core).

    Attributes
    ----------
    forest_ : tuple of ndarray
        All trees' nodes ``(feature, threshold, left, right, value, roots)``; ``roots[t]`` is tree t's root.
    estimators_samples_ : ndarray of shape (n_trees, n_bags)
        The training bags of each tree (its bootstrap sample).
    time_limited_params_ : dict
        ``{"n_estimators": n_trees}`` when a driver's fit ran out of time (:func:`automil.time_left`) before
        every tree was grown, and kept the trees grown; empty otherwise.
    threshold_ : float
        The binary decision threshold on the forest score (0.5 without bootstrap or for K > 2).
    classes_ : ndarray of shape (n_classes,)

    References
    ----------
    Chevaleyre & Zucker, "Solving multiple-instance and multiple-part learning problems with decision
    trees and rule sets", Canadian AI 2001 (the ID3-MI tree).
    Ren, Hou & Jiang, "Deep forest for multiple instance learning", 2019 (MIRF as their building block).
    """

    def __init__(self, n_estimators=100, max_features="sqrt", max_depth=None, min_samples_split=2,
                 bootstrap=True, split_weights="instances", threshold="oob", random_state=None, n_jobs=None,
                 tree="id3-mi"):
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.bootstrap = bootstrap
        self.split_weights = split_weights
        self.threshold = threshold
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.tree = tree

    def _fit(self, bags, y):
        n_estimators = check_int("n_estimators", self.n_estimators, 1)
        self.forest_, self.estimators_samples_ = grow_id3mi_forest(
            bags, y, len(self.classes_), n_estimators=n_estimators,
            bootstrap=bool(self.bootstrap), max_features=self.max_features, max_depth=self.max_depth,
            min_samples_split=self.min_samples_split, split_weights=self.split_weights,
            random_state=self.random_state, n_jobs=resolve_n_jobs(self.n_jobs), tree=self.tree)
        self.time_limited_params_ = time_limited(len(self.estimators_samples_), n_estimators)
        self.threshold_ = 0.5
        if self.threshold != "oob":
            if not (isinstance(self.threshold, float | int) and 0 < self.threshold < 1):
                raise ValueError(f"threshold={self.threshold!r} is invalid: use 'oob' or a number in (0, 1)")
            self.threshold_ = float(self.threshold)
        elif len(self.classes_) == 2 and self.bootstrap:
            in_bag = np.zeros((len(self.estimators_samples_), bags.n_bags), dtype=np.bool_)
            np.put_along_axis(in_bag, self.estimators_samples_, True, axis=1)
            oob = id3mi_bag_proba(bags.X, bags.offsets, *self.forest_, in_bag)
            self.threshold_ = oob_threshold(oob[:, 1], y)

    def _forest_proba(self, X, offsets):
        proba = id3mi_bag_proba(X, offsets, *self.forest_, NO_SKIP)
        return move_threshold(proba, self.threshold_) if len(self.classes_) == 2 else proba

    def _instance_scores(self, bags):
        """11: every instance as a bag of one, its forest-mean leaf distribution (n_instances, n_classes)."""
        return id3mi_instance_proba(bags.X, *self.forest_)

    def _witness(self, bags):
        """11: the instance with the largest forest-mean singleton score for the predicted class
        (binary: for the positive class, whose maximum decides the bag)."""
        instance = self._instance_scores(bags)
        # the predicted class has the largest per-class maximum (10.4), so the arg-max column decides
        return witness(bags.offsets, instance[:, 1] if len(self.classes_) == 2 else instance)
