"""The pdMISVM paper's synthetic MIL generator: one class-dependent witness per bag, the rest noise."""

from __future__ import annotations

import numpy as np

from automil import Bags

__all__ = ["make_synthetic_bags", "class_centres"]

# The paper fixes the shape (3 to 5 instances, the first from a unit-variance normal cluster that depends on
# the class, the others uniform noise) but not the cluster centres or the noise range. Our choice: centres
# on a sphere of radius CENTRE_RADIUS (every centre is an extreme point, so a linear one-vs-rest model can
# single out each class by its witness), noise uniform in [-NOISE_HALF_WIDTH, NOISE_HALF_WIDTH]^d around the
# origin, so noise is the same for every class and only the witness carries the label.
CENTRE_RADIUS = 10.0
NOISE_HALF_WIDTH = 1.0
MIN_BAG_SIZE, MAX_BAG_SIZE = 3, 5
# Centres depend on (n_features, class) only, never on `seed`: bags generated with different seeds (train
# and test sets) share the meaning of every class.
_CENTRE_SEED = 20231


def class_centres(n_features: int, n_classes: int) -> np.ndarray:
    """The cluster centre of each class, shape (n_classes, n_features).

    Centres for K classes are the first K rows of the centres for any larger K (rows are drawn in order
    from a generator seeded by ``n_features`` alone).
    """
    directions = np.random.default_rng((_CENTRE_SEED, n_features)).standard_normal((n_classes, n_features))
    return CENTRE_RADIUS * directions / np.linalg.norm(directions, axis=1, keepdims=True)


def make_synthetic_bags(n_bags: int, n_features: int = 10, n_classes: int = 2, seed: int = 0) -> Bags:
    """Bags of 3 to 5 instances whose first instance is drawn around the centre of the bag's class.

    Parameters
    ----------
    n_bags : int
        N, the number of bags. Classes are balanced (counts differ by at most one) and shuffled.
    n_features : int
        d, the instance dimension.
    n_classes : int
        K, the number of classes; bag labels are 0..K-1.
    seed : int
        Seeds labels, bag sizes, the witness draws and the noise (not the centres, see `class_centres`).

    Returns
    -------
    Bags
        ``instance_y`` is the bag's class for the planted (first) instance of each bag and -1 for noise.
    """
    if n_bags < 1 or n_features < 1 or n_classes < 2:
        raise ValueError(f"synthetic bags need n_bags >= 1, n_features >= 1 and n_classes >= 2, got "
                         f"n_bags={n_bags}, n_features={n_features}, n_classes={n_classes}")
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n_bags) % n_classes)
    sizes = rng.integers(MIN_BAG_SIZE, MAX_BAG_SIZE + 1, size=n_bags)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    X = rng.uniform(-NOISE_HALF_WIDTH, NOISE_HALF_WIDTH, size=(offsets[-1], n_features))
    first = offsets[:-1]
    X[first] = class_centres(n_features, n_classes)[y] + rng.standard_normal((n_bags, n_features))
    instance_y = np.full(offsets[-1], -1, dtype=np.int64)
    instance_y[first] = y
    return Bags(X, offsets, y, instance_y=instance_y, source="synthetic")
