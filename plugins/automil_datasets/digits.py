"""digits-bags: MNIST-bags built from scikit-learn's bundled 8x8 digits (a bag is positive when it holds a 9)."""

from __future__ import annotations

import numpy as np

from automil import Bags

__all__ = ["make_digits_bags", "TARGET_DIGIT", "BAG_SIZE_SD"]

TARGET_DIGIT = 9
BAG_SIZE_SD = 2.0  # standard deviation of the bag size around its mean (Ilse et al. use a normal too)


def make_digits_bags(n_positive: int = 100, n_negative: int = 100, mean_bag_size: float = 10,
                     seed: int = 0) -> Bags:
    """Bags of 8x8 digit images (64 pixel features, values 0..16); positive bags hold at least one 9.

    Following MNIST-bags (Ilse et al., 2018): bag sizes are drawn from a normal around ``mean_bag_size``
    (sd 2, rounded, at least 1) and instances are drawn with replacement from the digit pool. Negative
    bags draw from the non-9 images only; positive bags draw from all images and then one random position
    is set to a random 9, so a positive bag holds one 9 plus about a tenth of its other instances.

    Parameters
    ----------
    n_positive, n_negative : int
        Number of positive (label 1) and negative (label 0) bags; bag order is shuffled.
    mean_bag_size : float
        Mean number of instances per bag.
    seed : int
        Seeds sizes, draws and the bag order.

    Returns
    -------
    Bags
        ``instance_y`` is 1 for an image of a 9 and 0 otherwise; bag names are ``digits_<i>``.
    """
    from sklearn.datasets import load_digits

    if n_positive < 1 or n_negative < 1 or mean_bag_size < 1:
        raise ValueError(f"digits-bags needs n_positive >= 1, n_negative >= 1 and mean_bag_size >= 1, got "
                         f"{n_positive}, {n_negative}, {mean_bag_size}")
    digits = load_digits()
    is_target = digits.target == TARGET_DIGIT
    nines, others = np.flatnonzero(is_target), np.flatnonzero(~is_target)
    rng = np.random.default_rng(seed)
    n_bags = n_positive + n_negative
    y = rng.permutation(np.r_[np.ones(n_positive, dtype=np.int64), np.zeros(n_negative, dtype=np.int64)])
    sizes = np.maximum(1, np.rint(rng.normal(mean_bag_size, BAG_SIZE_SD, size=n_bags))).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    positive_row = np.repeat(y == 1, sizes)
    images = np.where(positive_row,
                      rng.integers(len(digits.target), size=offsets[-1]),
                      others[rng.integers(len(others), size=offsets[-1])])
    positive = np.flatnonzero(y == 1)
    planted = offsets[positive] + rng.integers(sizes[positive])
    images[planted] = nines[rng.integers(len(nines), size=len(positive))]
    return Bags(digits.data[images], offsets, y, instance_y=is_target[images].astype(np.int64),
                names=[f"digits_{i}" for i in range(n_bags)], feature_names=digits.feature_names,
                source="digits-bags")
