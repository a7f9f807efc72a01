"""Meta-features of a bag data set and the distance between two of them: how the driver finds the earlier
study most like a new one to warm-start it (the meta-learning step of auto-sklearn, Feurer et al., 2015)."""

from __future__ import annotations

from dataclasses import asdict, astuple, dataclass

import numpy as np
import scipy.sparse as sp

from automil.bags import Bags, row_blocks
from automil.endpoints import task_of

__all__ = ["MetaFeatures", "meta_features", "distance", "nearest", "META_FEATURES_ATTR"]

META_FEATURES_ATTR = "meta_features"  # the study attribute of the dataset's meta-features: what a warm start compares


@dataclass(frozen=True)
class MetaFeatures:
    """Simple facts of a labelled bag data set, cheap to compute and stored with each study.

    ``sparsity`` is the fraction of zero entries in the instance matrix (0: dense values, near 1: a few
    words per document); ``n_classes`` is 0 for survival and regression labels (no classes).
    """

    n_bags: int
    n_instances: int
    mean_bag_size: float
    n_features: int
    n_classes: int
    sparsity: float

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> MetaFeatures:
        """From a stored dict; a dict missing a field (written by another version) raises ``ValueError``."""
        try:
            return cls(**{name: values[name] for name in cls.__dataclass_fields__})
        except (KeyError, TypeError) as error:
            raise ValueError(f"not a meta-feature record: {values!r} ({error})") from None


def meta_features(bags: Bags) -> MetaFeatures:
    """The meta-features of labelled ``bags``."""
    X = bags.X
    nonzero = X.count_nonzero() if sp.issparse(X) else sum(np.count_nonzero(block) for block in row_blocks(X))
    cells = bags.n_instances * bags.n_features
    return MetaFeatures(n_bags=int(bags.n_bags), n_instances=int(bags.n_instances),
                        mean_bag_size=float(bags.n_instances / max(bags.n_bags, 1)),
                        n_features=int(bags.n_features),
                        n_classes=len(bags.classes) if task_of(bags.y) == "classification" else 0,
                        sparsity=float(1.0 - nonzero / cells) if cells else 0.0)  # plain numbers: stored as JSON


def distance(a: MetaFeatures, b: MetaFeatures) -> float:
    """Euclidean distance between the ``log1p`` of the meta-features.

    On the log scale a ratio counts, not a difference: 100 against 1000 bags is as far apart as 10
    against 100, and a data set with 10 000 features is not a thousand times further from one with 20
    than one with 30 is. ``log1p`` keeps zero defined (sparsity 0) and leaves the sparsity fraction, in
    [0, 1], nearly linear: fully dense against fully sparse counts ``log 2``, like a factor of two in
    the bag count.
    """
    return float(np.linalg.norm(np.log1p(np.array(astuple(a), dtype=float))
                                - np.log1p(np.array(astuple(b), dtype=float))))


def nearest(target: MetaFeatures, candidates: dict[str, MetaFeatures]) -> list[str]:
    """The names of ``candidates``, nearest to ``target`` first (ties by name, so that every process
    sharing a storage ranks them alike)."""
    return sorted(candidates, key=lambda name: (distance(target, candidates[name]), name))
