"""How well a learner finds the positive instances, on bags whose instances carry labels (``instance_y``):
the AUC of its instance scores and the precision of its witnesses, one test fold at a time.

A positive instance is one whose label equals the positive bag class (the larger of two): ``1`` of 0/1
labels, the planted instance of a positive ``synthetic`` bag (its noise is -1, the planted instance of a
negative bag 0). Data with more than two bag classes have no positive class and no figure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from automil.bags import Bags

__all__ = ["InstanceFold", "instance_auc", "witness_precision", "instance_fold"]


@dataclass(frozen=True)
class InstanceFold:
    """One test fold's instance figures; ``None`` where the learner gives no such output or the fold has
    no figure (see :func:`instance_auc`, :func:`witness_precision`)."""

    instance_auc: float | None = None
    witness_precision: float | None = None


def instance_auc(positive, scores) -> float | None:
    """ROC AUC of the instance ``scores`` against the instance labels ``positive`` (bool, one per instance).

    ``None`` when the instances hold only one class: an AUC ranks positives against negatives, so a fold
    without both has none (and is left out of the mean over folds, not counted as 0 or 0.5).
    """
    from sklearn.metrics import roc_auc_score

    positive = np.asarray(positive, dtype=bool)
    if positive.all() or not positive.any():
        return None
    return float(roc_auc_score(positive, np.asarray(scores, dtype=np.float64)))


def witness_precision(positive, offsets, witness, positive_bags) -> float | None:
    """The share of the positive bags whose witness is a positive instance.

    ``positive`` holds the instance labels (bool, one per instance), ``offsets`` the bags' first rows
    (shape ``(n_bags + 1,)``), ``witness`` each bag's witness position inside it and ``positive_bags``
    the bag labels (bool). ``None`` without positive bags.
    """
    positive_bags = np.asarray(positive_bags, dtype=bool)
    if not positive_bags.any():
        return None
    rows = np.asarray(offsets)[:-1][positive_bags] + np.asarray(witness)[positive_bags]
    return float(np.asarray(positive, dtype=bool)[rows].mean())


def instance_fold(model, bags: Bags) -> InstanceFold | None:
    """The instance figures of a fitted ``model`` (e.g. ``Standardized(learner)``) on the test ``bags``.

    ``None`` when the bags have no instance labels, the model more than two classes, or the model neither
    instance scores (``instance_scores``) nor a witness (``witness``): no figure, never a 0.
    """
    has_scores, has_witness = hasattr(model, "instance_scores"), hasattr(model, "witness")
    if bags.instance_y is None or bags.y is None or len(model.classes_) != 2 or not (has_scores or has_witness):
        return None
    positive_class = model.classes_[1]
    positive = bags.instance_y == positive_class
    return InstanceFold(
        instance_auc=instance_auc(positive, model.instance_scores(bags)[:, 1]) if has_scores else None,
        witness_precision=witness_precision(positive, bags.offsets, model.witness(bags), bags.y == positive_class)
        if has_witness else None)
