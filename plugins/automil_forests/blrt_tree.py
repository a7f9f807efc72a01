"""The bag-level randomized tree (docs/algorithms-beyond-svm.md 12, after ``komartom/BLRT.jl``) in numba.

A tree is the tuple ``(feature, threshold, left, right, value, ratio)``: node ``j`` sends a whole bag left
when the fraction of its instances with ``x[feature[j]] <= threshold[j]`` is greater than ``ratio[j]``
(12.1); a leaf has ``left[j] == -1``; ``value[j]`` is the class distribution of the bags at node ``j``.
"""

import numpy as np
from numba import njit

from automil_forests.id3mi_tree import draw_features, entropy


@njit(cache=True, nogil=True)
def goes_left(x_f, start, stop, v, r):
    """12.1: ``|{x in B : x_f <= v}| / |B| > r`` for the bag in rows ``start:stop`` of the feature
    column ``x_f``."""
    below = 0
    for row in range(start, stop):
        if x_f[row] <= v:
            below += 1
    return below / (stop - start) > r


@njit(cache=True, nogil=True)
def split_loss(c_left, c_right):
    """12.2.3: the weighted entropy ``(n_L/n) H(L) + (n_R/n) H(R)`` of the bag labels (log base 2)."""
    n_left, n_right = c_left.sum(), c_right.sum()
    n = n_left + n_right
    return n_left / n * entropy(c_left, n_left) + n_right / n * entropy(c_right, n_right)


@njit(cache=True, nogil=True)
def grow_blrt_tree(XT, offsets, y, n_classes, max_features, n_rules, min_samples, max_depth, seed):
    """Grow one BLRT tree on all the bags (12.2; no bootstrap). ``XT`` is the instances feature-major
    (``X.T`` contiguous, so a node reads one feature as one contiguous row); ``max_depth = -1`` is
    unlimited."""
    np.random.seed(seed)
    n_bags = offsets.shape[0] - 1
    n_features = XT.shape[0]
    capacity = 2 * n_bags - 1
    feature = np.full(capacity, -1, dtype=np.int64)
    threshold = np.zeros(capacity)
    ratio = np.zeros(capacity)
    left = np.full(capacity, -1, dtype=np.int64)
    right = np.full(capacity, -1, dtype=np.int64)
    value = np.zeros((capacity, n_classes))

    bags = np.arange(n_bags)
    perm = np.arange(n_features)
    v = np.empty(n_rules)
    r = np.empty(n_rules)
    below = np.zeros(n_rules, dtype=np.int64)
    c_rule_left = np.zeros((n_rules, n_classes), dtype=np.int64)
    c_node = np.zeros(n_classes, dtype=np.int64)
    c_right = np.zeros(n_classes, dtype=np.int64)

    stack_start = np.empty(capacity, dtype=np.int64)
    stack_end = np.empty(capacity, dtype=np.int64)
    stack_depth = np.empty(capacity, dtype=np.int64)
    stack_node = np.empty(capacity, dtype=np.int64)
    stack_start[0], stack_end[0], stack_depth[0], stack_node[0] = 0, n_bags, 0, 0
    top = 1
    n_nodes = 1
    while top > 0:
        top -= 1
        start, end, depth, node = stack_start[top], stack_end[top], stack_depth[top], stack_node[top]
        n = end - start
        c_node[:] = 0
        for i in range(start, end):
            c_node[y[bags[i]]] += 1
        n_present_classes = 0
        for k in range(n_classes):
            value[node, k] = c_node[k] / n
            if c_node[k] > 0:
                n_present_classes += 1
        if n_present_classes <= 1 or depth == max_depth:
            continue  # 12.2.1

        # 12.2.2: n_rules random rules on each drawn non-constant feature, keep the smallest loss
        draw_features(perm, max_features, n_features)
        best_loss = np.inf
        best_feature = -1
        best_v = 0.0
        best_r = 0.0
        for j in range(min(max_features, n_features)):
            f = perm[j]
            x_f = XT[f]
            lo, hi = np.inf, -np.inf
            for i in range(start, end):
                b = bags[i]
                for row in range(offsets[b], offsets[b + 1]):
                    lo = min(lo, x_f[row])
                    hi = max(hi, x_f[row])
            if not hi > lo:
                continue
            for q in range(n_rules):
                v[q] = lo + np.random.random() * (hi - lo)
                r[q] = np.random.random()
            c_rule_left[:, :] = 0
            for i in range(start, end):
                b = bags[i]
                below[:] = 0
                for row in range(offsets[b], offsets[b + 1]):
                    x = x_f[row]
                    for q in range(n_rules):
                        if x <= v[q]:
                            below[q] += 1
                size = offsets[b + 1] - offsets[b]
                for q in range(n_rules):
                    if below[q] / size > r[q]:
                        c_rule_left[q, y[b]] += 1
            for q in range(n_rules):
                for k in range(n_classes):
                    c_right[k] = c_node[k] - c_rule_left[q, k]
                loss = split_loss(c_rule_left[q], c_right)
                if loss < best_loss:
                    best_loss = loss
                    best_feature = f
                    best_v = v[q]
                    best_r = r[q]
        if best_feature < 0:
            continue  # no rule drawn: every drawn feature constant here

        i, last = start, end - 1
        while i <= last:
            b = bags[i]
            if goes_left(XT[best_feature], offsets[b], offsets[b + 1], best_v, best_r):
                i += 1
            else:
                bags[i], bags[last] = bags[last], bags[i]
                last -= 1
        if i - start < min_samples or end - i < min_samples:
            continue  # 12.2.4: a child too small ends growth here (no retry)
        feature[node] = best_feature
        threshold[node] = best_v
        ratio[node] = best_r
        left[node] = n_nodes
        right[node] = n_nodes + 1
        stack_start[top], stack_end[top], stack_depth[top], stack_node[top] = i, end, depth + 1, n_nodes + 1
        top += 1
        stack_start[top], stack_end[top], stack_depth[top], stack_node[top] = start, i, depth + 1, n_nodes
        top += 1
        n_nodes += 2
    return (feature[:n_nodes].copy(), threshold[:n_nodes].copy(), left[:n_nodes].copy(),
            right[:n_nodes].copy(), value[:n_nodes].copy(), ratio[:n_nodes].copy())


@njit(cache=True, nogil=True)
def blrt_bag_proba(X, offsets, feature, threshold, left, right, value, ratio, roots):
    """12.3: every tree routes the whole bag to one leaf; the forest averages the leaf distributions."""
    n_bags = offsets.shape[0] - 1
    n_trees = roots.shape[0]
    out = np.zeros((n_bags, value.shape[1]))
    for i in range(n_bags):
        for t in range(n_trees):
            node = roots[t]
            while left[node] >= 0:
                if goes_left(X[:, feature[node]], offsets[i], offsets[i + 1], threshold[node], ratio[node]):
                    node = left[node]
                else:
                    node = right[node]
            out[i] += value[node]
        out[i] /= n_trees
    return out
