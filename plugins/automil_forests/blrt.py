"""BLRT, the forest of bag-level randomized trees (docs/algorithms-beyond-svm.md 12)."""

from __future__ import annotations

import numpy as np

from automil_forests.blrt_tree import blrt_bag_proba, grow_blrt_tree
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


class BLRTClassifier(TreeEnsemble):
    """Bag-level randomized trees: extremely randomized trees whose rules route whole bags.

    A rule ``(f, v, r)`` sends a bag left when more than the fraction ``r`` of its instances have
    ``x_f <= v``; thresholds and fractions are drawn at random (``n_rules`` per drawn feature) and the
    rule with the smallest weighted bag-label entropy is kept. Every tree sees all bags (no bootstrap).

    Parameters
    ----------
    n_estimators : int, default=100
    max_features : {"sqrt", "log2"}, int, float or None, default="sqrt"
        Features drawn per node (``round(sqrt(d))`` by default, as BLRT.jl's ``nsubfeat``).
    n_rules : int, default=16
        Random rules tried per drawn feature.
    min_samples : int, default=1
        A split leaving fewer bags on one side is not made; the node becomes a leaf.
    max_depth : int or None, default=None
        ``None`` (BLRT.jl's ``-1``) is unlimited.
    random_state : int, numpy Generator or None, default=None
        Seeds every tree independently (``SeedSequence.spawn``), so the forest does not depend on n_jobs.
    n_jobs : int or None, default=None
        Threads growing trees and predicting (``-1``: every core).

    Attributes
    ----------
    forest_ : tuple of ndarray
        All trees' nodes ``(feature, threshold, left, right, value, ratio, roots)``.
    time_limited_params_ : dict
        ``{"n_estimators": n_trees}`` when a driver's fit ran out of time (:func:`automil.time_left`) before
        every tree was grown, and kept the trees grown; empty otherwise.
    classes_ : ndarray of shape (n_classes,)

    References
    ----------
    Komárek & Somol, "Multiple instance learning with bag-level randomized trees", ECML-PKDD 2018.
    """

    def __init__(self, n_estimators=100, max_features="sqrt", n_rules=16, min_samples=1, max_depth=None,
                 random_state=None, n_jobs=None):
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.n_rules = n_rules
        self.min_samples = min_samples
        self.max_depth = max_depth
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _fit(self, bags, y):
        m = resolve_max_features(self.max_features, bags.n_features)
        n_rules = check_int("n_rules", self.n_rules, 1)
        min_samples = check_int("min_samples", self.min_samples, 1)
        depth = resolve_max_depth(self.max_depth)
        n_classes = len(self.classes_)
        XT = np.ascontiguousarray(bags.X.T)  # feature-major: a node reads one feature contiguously

        def grow(seeds):
            _, draw_seed = seeds
            return grow_blrt_tree(XT, bags.offsets, y, n_classes, m, n_rules, min_samples, depth, draw_seed)

        n_estimators = check_int("n_estimators", self.n_estimators, 1)
        trees = grow_in_time(grow, tree_seeds(self.random_state, n_estimators), resolve_n_jobs(self.n_jobs),
                             lambda tree: blrt_bag_proba(bags.X, bags.offsets, *stack_trees([tree])))
        self.forest_ = stack_trees(trees)
        self.time_limited_params_ = time_limited(len(trees), n_estimators)

    def _forest_proba(self, X, offsets):
        return blrt_bag_proba(X, offsets, *self.forest_)
