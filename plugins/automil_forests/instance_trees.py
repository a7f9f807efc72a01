"""Instance-level trees for MIRF's ``tree="instance"``: scikit-learn's CART trees grown on the instances of a
bootstrap sample of bags, every instance labelled with its bag's label, stored in the flat node arrays of
the ID3-MI trees so that MIRF scores, thresholds and explains them the same way (bag = max over instances).

With 300 trees this is the instance-level random forest MIRF must at least match (docs/accuracy-forests.md),
as a point of MIRF's search space.
"""

from __future__ import annotations

import numpy as np
from sklearn.tree import DecisionTreeClassifier


def _flat_tree(fitted: DecisionTreeClassifier, n_classes: int) -> tuple:
    """``(feature, threshold, left, right, value)`` of a fitted tree, leaves ``-1``, value the class
    distribution over all ``n_classes`` (a tree that saw fewer classes gets zeros for the others)."""
    tree = fitted.tree_
    value = np.zeros((tree.node_count, n_classes))
    value[:, fitted.classes_.astype(np.int64)] = tree.value[:, 0, :]
    value /= np.maximum(value.sum(axis=1, keepdims=True), 1e-300)
    leaf = tree.children_left < 0
    feature = np.where(leaf, -1, tree.feature).astype(np.int64)
    return (feature, tree.threshold.astype(np.float64), tree.children_left.astype(np.int64),
            tree.children_right.astype(np.int64), value)


def grow_instance_tree(bags, y, n_classes: int, drawn, times, *, max_features: int, max_depth: int,
                       min_samples_split: int, seed: int) -> tuple:
    """One CART tree (Gini) on the instances of the bags ``drawn`` (each ``times`` as often as drawn, as
    sample weights), labelled by their bag; ``max_depth`` ``-1`` is unlimited."""
    rows = bags.instance_rows(drawn)
    sizes = bags.sizes[drawn]
    labels, weights = np.repeat(y[drawn], sizes), np.repeat(times, sizes).astype(np.float64)
    fitted = DecisionTreeClassifier(max_features=max_features, max_depth=None if max_depth < 0 else max_depth,
                                    min_samples_split=max(2, min_samples_split), random_state=seed % 2**32)
    fitted.fit(bags.X[rows], labels, sample_weight=weights)
    return _flat_tree(fitted, n_classes)
