"""The ID3-MI tree (docs/algorithms-beyond-svm.md 10) in numba: grown on flat node arrays, bags counted in the
split criterion.

A tree is the tuple ``(feature, threshold, left, right, value)``: node ``j`` sends an instance left when
``x[feature[j]] <= threshold[j]``; a leaf has ``left[j] == -1``; ``value[j]`` is the class distribution of
the bags present at node ``j`` (every node has one, leaves use it).
"""

import numpy as np
from numba import njit

# Gains within this distance count as equal, so ties go to the first feature and the smallest threshold
# (10.3) even when rounding makes equal gains differ in the last bits.
GAIN_TIE = 1e-12

NODE, CHILDREN, INSTANCES = 0, 1, 2  # the gain's child weights (weighting in grow_id3mi_tree)


@njit(cache=True, nogil=True)
def entropy(counts, total):
    """``Info_multi`` of 10.2 (log base 2) for class counts of bags; 0 for an empty node."""
    h = 0.0
    if total == 0:
        return h
    for k in range(counts.shape[0]):
        if counts[k] > 0:
            p = counts[k] / total
            h -= p * np.log2(p)
    return h


@njit(cache=True, nogil=True)
def draw_features(perm, n_draw, n_features):
    """The first ``n_draw`` entries of ``perm`` become a uniform draw without replacement (partial
    Fisher-Yates). With every feature wanted, the order stays the natural one (no randomness used)."""
    if n_draw >= n_features:
        return
    for j in range(n_draw):
        r = np.random.randint(j, n_features)
        perm[j], perm[r] = perm[r], perm[j]


@njit(cache=True, nogil=True)
def sort_pairs(vals, idx, stack):
    """Sort ``vals`` ascending in place and permute ``idx`` alongside: a three-way quicksort (many equal
    values: duplicated bags, integer features) with insertion sort on short runs; ``stack`` holds at
    least 2 * 64 ints (the smaller part is sorted first, so depth stays below log2 n)."""
    lo, hi, top = 0, vals.shape[0], 0
    while True:
        while hi - lo > 16:
            a, b, c = vals[lo], vals[(lo + hi) // 2], vals[hi - 1]
            pivot = max(min(a, b), min(max(a, b), c))
            lt, i, gt = lo, lo, hi - 1
            while i <= gt:
                if vals[i] < pivot:
                    vals[lt], vals[i] = vals[i], vals[lt]
                    idx[lt], idx[i] = idx[i], idx[lt]
                    lt += 1
                    i += 1
                elif vals[i] > pivot:
                    vals[gt], vals[i] = vals[i], vals[gt]
                    idx[gt], idx[i] = idx[i], idx[gt]
                    gt -= 1
                else:
                    i += 1
            if lt - lo < hi - gt - 1:
                stack[top], stack[top + 1] = gt + 1, hi
                hi = lt
            else:
                stack[top], stack[top + 1] = lo, lt
                lo = gt + 1
            top += 2
        for i in range(lo + 1, hi):
            v, k = vals[i], idx[i]
            j = i - 1
            while j >= lo and vals[j] > v:
                vals[j + 1] = vals[j]
                idx[j + 1] = idx[j]
                j -= 1
            vals[j + 1] = v
            idx[j + 1] = k
        if top == 0:
            return
        top -= 2
        lo, hi = stack[top], stack[top + 1]


RADIX_BITS = 11  # digit of the radix sort: 2,048 buckets, two passes up to 4 million instances
RADIX_MIN = 128  # nodes with fewer instances sort their values by comparison instead


@njit(cache=True, nogil=True)
def radix_sort_pairs(keys, idx, tmp_keys, tmp_idx, counts, n_bits):
    """Sort the integer ``keys`` (< 2 ** n_bits) ascending in place, stably, permuting ``idx``
    alongside: least-significant-digit radix sort, linear in the number of keys."""
    n = keys.shape[0]
    src_k, src_i, dst_k, dst_i = keys, idx, tmp_keys[:n], tmp_idx[:n]
    mask = (1 << RADIX_BITS) - 1
    shift = 0
    while shift < n_bits:
        counts[:] = 0
        for i in range(n):
            counts[((src_k[i] >> shift) & mask) + 1] += 1
        for d in range(mask + 1):
            counts[d + 1] += counts[d]
        for i in range(n):
            d = (src_k[i] >> shift) & mask
            dst_k[counts[d]] = src_k[i]
            dst_i[counts[d]] = src_i[i]
            counts[d] += 1
        src_k, src_i, dst_k, dst_i = dst_k, dst_i, src_k, src_i
        shift += RADIX_BITS
    if src_k is not keys:
        keys[:] = src_k
        idx[:] = src_i


@njit(cache=True, nogil=True)
def weighted_info(counts, nlogn):
    """``c(child) * Info_multi(child)`` from the table ``nlogn[c] = c log2 c``: no logarithm per
    candidate threshold."""
    total = 0
    s = 0.0
    for k in range(counts.shape[0]):
        total += counts[k]
        s += nlogn[counts[k]]
    return nlogn[total] - s


@njit(cache=True, nogil=True)
def grow_id3mi_tree(XT, rank, rows, inst_bag, bag_class, bag_weight, n_classes, max_features,
                    max_depth, min_samples_split, weighting, seed):
    """Grow one ID3-MI tree (10.3, 10.4).

    Parameters
    ----------
    XT : ndarray of shape (n_features, n_instances)
        The instances feature-major (``X.T`` contiguous), so a node reads one feature from one row.
    rank : int32 array of shape (n_features, n_instances)
        Every instance's position in the ascending order of each feature (the inverse of a stable
        ``argsort`` of each row of ``XT``), shared by the trees of a forest: the integer keys that let a
        node sort its instances in linear time.
    rows : int64 array of shape (n_train,)
        The training instances, as columns of ``XT``, each once.
    inst_bag : int64 array of shape (n_train,)
        The bag of each training instance, ``0..n_bags-1``.
    bag_class : int64 array of shape (n_bags,)
    bag_weight : int64 array of shape (n_bags,)
        How many times each bag was drawn: a bag drawn twice counts as two bags, and its instances as two
        instances each (11), without listing them twice; its copies would always go the same way, so the
        tree is the one grown on the copies, at a fraction of the sorting and sweeping.
    max_features : int
        Features searched per node; ``>= n_features`` searches all in their natural order.
    max_depth : int
        ``-1`` for unlimited.
    weighting : int
        Weights of the children's entropies in the gain: ``NODE`` ``c(child) / c(S)`` (10.2),
        ``CHILDREN`` ``c(child) / (c(L) + c(R))``, ``INSTANCES`` ``n(child) / n(S)`` (instances);
        see ``MIRFClassifier.split_weights``.
    seed : int
        Seeds this thread's numba generator (feature draws only).
    """
    np.random.seed(seed)
    n_train = rows.shape[0]
    n_features = XT.shape[0]
    capacity = 2 * n_train - 1
    feature = np.full(capacity, -1, dtype=np.int64)
    threshold = np.zeros(capacity)
    left = np.full(capacity, -1, dtype=np.int64)
    right = np.full(capacity, -1, dtype=np.int64)
    value = np.zeros((capacity, n_classes))

    n_bags = bag_class.shape[0]
    n_drawn = bag_weight.sum()
    nlogn = np.zeros(n_drawn + 1)
    for c in range(2, n_drawn + 1):
        nlogn[c] = c * np.log2(c)
    samples = np.arange(n_train)
    n_rows = XT.shape[1]
    perm = np.arange(n_features)
    vals = np.empty(n_train)
    sort_stack = np.empty(128, dtype=np.int64)
    keys = np.empty(n_train, dtype=np.int32)
    tmp_keys = np.empty(n_train, dtype=np.int32)
    tmp_samples = np.empty(n_train, dtype=np.int64)
    radix_counts = np.empty((1 << RADIX_BITS) + 1, dtype=np.int64)
    n_bits = max(1, int(np.ceil(np.log2(max(n_rows, 2)))))
    node_count = np.zeros(n_bags, dtype=np.int64)  # instances of each bag at the node
    left_count = np.zeros(n_bags, dtype=np.int64)
    right_count = np.zeros(n_bags, dtype=np.int64)
    c_node = np.zeros(n_classes, dtype=np.int64)  # c_k(S): bags of class k present
    c_left = np.zeros(n_classes, dtype=np.int64)
    c_right = np.zeros(n_classes, dtype=np.int64)
    # A feature constant at a node is constant in its whole subtree (scikit-learn's known constants):
    # where it was found (depth, node), checked against the path of the node at hand, so a draw of it
    # below costs nothing. The draws are untouched, so the tree is the one grown without this.
    const_depth = np.full(n_features, -1, dtype=np.int64)
    const_node = np.full(n_features, -1, dtype=np.int64)
    path = np.empty(capacity, dtype=np.int64)  # path[d]: the ancestor at depth d (depth-first order)

    stack = np.empty((capacity, 4), dtype=np.int64)  # start, end, depth, node
    stack[0] = (0, n_train, 0, 0)
    top = 1
    n_nodes = 1
    while top > 0:
        top -= 1
        start, end, depth, node = stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3]
        n_v = end - start
        path[depth] = node

        # 10.2: class counts of the bags present at the node
        for i in range(start, end):
            node_count[inst_bag[samples[i]]] = 0
        c_node[:] = 0
        n_node = 0  # the node's instances, each counted as often as its bag was drawn (as n_left)
        for i in range(start, end):
            b = inst_bag[samples[i]]
            if node_count[b] == 0:
                c_node[bag_class[b]] += bag_weight[b]
            node_count[b] += 1
            n_node += bag_weight[b]
        c = c_node.sum()
        n_present_classes = 0
        for k in range(n_classes):
            value[node, k] = c_node[k] / c
            if c_node[k] > 0:
                n_present_classes += 1
        if n_present_classes <= 1 or depth == max_depth or c < min_samples_split:
            continue  # 10.4: pure, deep enough or too few bags

        # 10.3: one sorted sweep per candidate feature
        info_c = weighted_info(c_node, nlogn)  # c * Info_multi(S)
        draw_features(perm, max_features, n_features)
        node_samples = samples[start:end]
        node_vals = vals[:n_v]
        best_gain = -np.inf
        best_feature = -1
        best_threshold = 0.0
        for j in range(min(max_features, n_features)):
            f = perm[j]
            d = const_depth[f]
            if 0 <= d < depth and path[d] == const_node[f]:
                continue  # constant at an ancestor, so here too
            first = XT[f, rows[node_samples[0]]]
            i = 1
            while i < n_v and XT[f, rows[node_samples[i]]] == first:
                i += 1
            if i == n_v:
                const_depth[f] = depth
                const_node[f] = node
                continue  # constant at this node: no threshold, and none below
            if n_v >= RADIX_MIN:  # sort by rank: linear in the node's instances (10.5's presort)
                node_keys = keys[:n_v]
                for i in range(n_v):
                    node_keys[i] = rank[f, rows[node_samples[i]]]
                radix_sort_pairs(node_keys, node_samples, tmp_keys, tmp_samples, radix_counts, n_bits)
                for i in range(n_v):
                    node_vals[i] = XT[f, rows[node_samples[i]]]
            else:
                for i in range(n_v):
                    node_vals[i] = XT[f, rows[node_samples[i]]]
                sort_pairs(node_vals, node_samples, sort_stack)
            for i in range(n_v):
                b = inst_bag[node_samples[i]]
                left_count[b] = 0
                right_count[b] = node_count[b]
            c_left[:] = 0
            c_right[:] = c_node
            n_left = 0
            changed = True  # bag counts moved since the last threshold evaluated
            for i in range(n_v - 1):
                b = inst_bag[node_samples[i]]
                k = bag_class[b]
                n_left += bag_weight[b]
                left_count[b] += 1
                if left_count[b] == 1:
                    c_left[k] += bag_weight[b]
                    changed = True
                right_count[b] -= 1
                if right_count[b] == 0:
                    c_right[k] -= bag_weight[b]
                    changed = True
                lo, hi = node_vals[i], node_vals[i + 1]
                # candidates are the thresholds where a bag enters the left child or leaves the right
                # one: between two of them the bag counts, and so the gains by bag counts, stay the same
                # (ties keep the first); instance weights are evaluated at the same candidates
                if changed and lo < hi:
                    changed = False
                    # Gain_multi = Info(S) - sum_child w(child) Info(child) (10.2), w(child) = c(child) / c(S),
                    # c(child) / (c(L) + c(R)) or n(child) / n(S)
                    if weighting == INSTANCES:
                        gain = (info_c / c
                                - (n_left * weighted_info(c_left, nlogn) / c_left.sum()
                                   + (n_node - n_left) * weighted_info(c_right, nlogn) / c_right.sum()) / n_node)
                    else:
                        weight = c_left.sum() + c_right.sum() if weighting == CHILDREN else c
                        gain = (info_c / c
                                - (weighted_info(c_left, nlogn) + weighted_info(c_right, nlogn)) / weight)
                    if gain > best_gain + GAIN_TIE:
                        best_gain = gain
                        best_feature = f
                        best_threshold = 0.5 * (lo + hi)
                        if best_threshold >= hi:  # lo and hi adjacent floats
                            best_threshold = lo
        if best_feature < 0:
            continue  # 11: every candidate feature constant here

        # split even at a gain <= 0 (10.3): partition the node's instances, left = x_f <= theta
        i, r = start, end - 1
        while i <= r:
            if XT[best_feature, rows[samples[i]]] <= best_threshold:
                i += 1
            else:
                samples[i], samples[r] = samples[r], samples[i]
                r -= 1
        feature[node] = best_feature
        threshold[node] = best_threshold
        left[node] = n_nodes
        right[node] = n_nodes + 1
        stack[top] = (i, end, depth + 1, n_nodes + 1)
        stack[top + 1] = (start, i, depth + 1, n_nodes)
        top += 2
        n_nodes += 2
    return (feature[:n_nodes].copy(), threshold[:n_nodes].copy(), left[:n_nodes].copy(),
            right[:n_nodes].copy(), value[:n_nodes].copy())


@njit(cache=True, nogil=True)
def leaf_of(X, row, feature, threshold, left, right, node):
    """The leaf that instance ``X[row]`` reaches from ``node``."""
    while left[node] >= 0:
        if X[row, feature[node]] <= threshold[node]:
            node = left[node]
        else:
            node = right[node]
    return node


@njit(cache=True, nogil=True)
def id3mi_bag_proba(X, offsets, feature, threshold, left, right, value, roots, skip):
    """Forest class vectors of bags by the multi-instance rule of 10.4 applied to the forest's
    instance scores (the mean over trees of the leaf distributions, as for the witness in 11).

    Binary: ``P(pos | B) = max_x p_pos(x)``; K > 2: ``s_k = max_x p_k(x)``, normalized. With one tree
    this is exactly 10.4. ``skip`` (shape (n_trees, n_bags), or empty) leaves out tree t for bag i where
    ``skip[t, i]``: out-of-bag scores of training bags; a bag no tree scores gets NaN.
    """
    n_bags = offsets.shape[0] - 1
    n_classes = value.shape[1]
    n_trees = roots.shape[0]
    out = np.zeros((n_bags, n_classes))
    s = np.empty(n_classes)
    p = np.empty(n_classes)
    for i in range(n_bags):
        s[:] = 0.0
        used = 0
        for row in range(offsets[i], offsets[i + 1]):
            p[:] = 0.0
            used = 0
            for t in range(n_trees):
                if skip.shape[0] > 0 and skip[t, i]:
                    continue
                used += 1
                p += value[leaf_of(X, row, feature, threshold, left, right, roots[t])]
            for k in range(n_classes):
                s[k] = max(s[k], p[k] / max(used, 1))
        if used == 0:
            out[i] = np.nan
        elif n_classes == 2:
            out[i, 0] = 1.0 - s[1]
            out[i, 1] = s[1]
        else:
            out[i] = s / s.sum()
    return out


@njit(cache=True, nogil=True)
def id3mi_instance_proba(X, feature, threshold, left, right, value, roots):
    """Each instance as a bag of one (11, witness): the mean over trees of its leaf's distribution."""
    n = X.shape[0]
    n_trees = roots.shape[0]
    out = np.zeros((n, value.shape[1]))
    for row in range(n):
        for t in range(n_trees):
            out[row] += value[leaf_of(X, row, feature, threshold, left, right, roots[t])]
        out[row] /= n_trees
    return out
