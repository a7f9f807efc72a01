"""The deep MIL learners as automil estimators: five networks, each for three tasks.

A network's mixin holds its own parameters and builds it (``_network``); a task's base says what its outputs
mean: :class:`DeepMILClassifier` (classes), :class:`~automil_deep.outcomes.DeepMILSurvival` (a risk and a
survival curve) and :class:`~automil_deep.outcomes.DeepMILRegressor` (a value). Everything else, training
and reading bags, is :class:`~automil_deep.learning.DeepMIL`'s.
"""

from __future__ import annotations

import numpy as np

from automil import BagClassifier
from automil_deep.learning import MAX_INSTANCES, DeepMIL
from automil_deep.outcomes import DeepMILRegressor, DeepMILSurvival

__all__ = ["ABMILClassifier", "ABMILRegressor", "ABMILSurvival", "DSMILClassifier", "DSMILRegressor", "DSMILSurvival",
           "DeepMILClassifier", "MAX_INSTANCES", "MINetClassifier", "MINetRegressor", "MINetSurvival",
           "MiNetClassifier", "MiNetRegressor", "MiNetSurvival", "TransMILClassifier", "TransMILRegressor",
           "TransMILSurvival"]


class DeepMILClassifier(DeepMIL, BagClassifier):
    """A deep learner's classification: class logits, cross-entropy, and the networks' averaged class
    probabilities (scores: the log of them).

    Parameters
    ----------
    class_weight : {"balanced"} or None, default="balanced"
        ``"balanced"``: each bag's loss (training and held-out) weighs ``n / (n_classes * n_k)`` for its
        class k, so every class counts as much in an epoch as in a class-balanced sample, with every bag
        still seen once an epoch. ``None``: every bag weighs 1.
    **common
        See :class:`~automil_deep.learning.DeepMIL`.
    """

    PICKLED_BEFORE = {**DeepMIL.PICKLED_BEFORE, "class_weight": None}  # weighed every bag alike

    def __init__(self, *, class_weight="balanced", **common):
        super().__init__(**common)
        self.class_weight = class_weight

    def _fit(self, bags, y):
        from automil_deep.heads import Classes

        self._train(bags, y, lambda train, device: Classes(y, self._class_weight(y[train]), device))

    def _n_outputs(self):
        return len(self.classes_)

    @staticmethod
    def _combine(outputs):
        from automil_deep.heads import Classes

        return Classes.combine(outputs)

    def _class_weight(self, y):
        """Each class's loss weight for the bags ``y`` (class indices): ``"balanced"`` is ``n / (K n_k)``, so
        every class weighs as much in an epoch (a class with no bag here gets 0); ``None``: all 1."""
        if self.class_weight is None:
            return None
        if self.class_weight != "balanced":
            raise ValueError(f"class_weight={self.class_weight!r}: use 'balanced' or None")
        counts = np.bincount(y, minlength=len(self.classes_)).astype(np.float64)
        present = counts > 0
        weight = np.zeros(len(counts))
        weight[present] = len(y) / (present.sum() * counts[present])
        return weight

    def _decision_function(self, bags):
        return self._outputs(bags, instance_scores=False)[0]

    def _predict_proba(self, bags):
        return np.exp(self._outputs(bags, instance_scores=False)[0])

    def _witness(self, bags):
        log_probabilities, scores = self._outputs(bags)
        predicted = np.argmax(log_probabilities, axis=1)
        return np.array([int(np.argmax(s[:, k])) for s, k in zip(scores, predicted)], dtype=np.int64)

    def _instance_scores(self, bags):
        """Each instance's evidence for each class, shape ``(n_instances, n_classes)``: attention weights
        (``abmil``, ``transmil``: the same in every column) or instance classifier scores (the others).
        ``witness`` is the arg-max within the bag of the predicted class's column."""
        return np.vstack(self._outputs(bags)[1])


# ---- the networks: each one's own parameters, and how it is built -------------------------------------
class ABMILNetwork:
    """Attention-based deep MIL (Ilse, Tomczak & Welling, ICML 2018); the witness is the instance of
    largest attention weight.

    Parameters
    ----------
    gated : bool, default=False
        Gated attention (``tanh(V h) * sigm(U h)``) instead of ``tanh(V h)``.
    """

    def __init__(self, *, gated=False, **common):
        super().__init__(**common)
        self.gated = gated

    def _network(self, n_features, n_outputs):
        from automil_deep.networks import ABMIL

        return ABMIL(n_features, n_outputs, self.hidden, self.dropout, self.gated)


class PoolingNetwork:
    """A network that pools over a bag's instances (mi-Net, MI-Net).

    Parameters
    ----------
    pooling : {"max", "mean"}, default="max"
    """

    def __init__(self, *, pooling="max", **common):
        super().__init__(**common)
        self.pooling = pooling


class MiNetNetwork(PoolingNetwork):
    """mi-Net (Wang, Yan, Tang, Bai & Liu, Pattern Recognition 2018): instance outputs pooled into the
    bag's; parameters as :class:`PoolingNetwork`."""

    def _network(self, n_features, n_outputs):
        from automil_deep.networks import MiNet

        return MiNet(n_features, n_outputs, self.hidden, self.dropout, self.pooling)


class MINetNetwork(PoolingNetwork):
    """MI-Net (Wang et al., Pattern Recognition 2018): pooled instance embeddings read as the bag.

    Parameters
    ----------
    deep_supervision : bool, default=True
        A head on every layer's pooled embedding, their losses averaged (MI-Net with DS).
    **pooling
        See :class:`PoolingNetwork`.
    """

    def __init__(self, *, deep_supervision=True, **common):
        super().__init__(**common)
        self.deep_supervision = deep_supervision

    def _network(self, n_features, n_outputs):
        from automil_deep.networks import MINet

        return MINet(n_features, n_outputs, self.hidden, self.dropout, self.pooling, self.deep_supervision)


class TransMILNetwork:
    """TransMIL (Shao et al., NeurIPS 2021), on bags as sets (see ``automil_deep.networks.TransMIL``)."""

    # exact self-attention, measured in its prediction pass on single bags of 1,500 to 3,000 instances: a bag
    # of 10,000 instances holds 10^8 pairs (about 4 GB) at once
    pair_bytes = 40.0

    def _network(self, n_features, n_outputs):
        from automil_deep.networks import TransMIL

        return TransMIL(n_features, n_outputs, self.hidden, self.dropout)


class DSMILNetwork:
    """DSMIL (Li, Li & Eliceiri, CVPR 2021): dual-stream MIL; the witness is the critical instance."""

    def _network(self, n_features, n_outputs):
        from automil_deep.networks import DSMIL

        return DSMIL(n_features, n_outputs, self.hidden, self.dropout)


# ---- the learners: a network for a task (parameters: the network's, the task's, DeepMIL's) ----------------
class ABMILClassifier(ABMILNetwork, DeepMILClassifier):
    __doc__ = ABMILNetwork.__doc__


class ABMILSurvival(ABMILNetwork, DeepMILSurvival):
    __doc__ = ABMILNetwork.__doc__


class ABMILRegressor(ABMILNetwork, DeepMILRegressor):
    __doc__ = ABMILNetwork.__doc__


class MiNetClassifier(MiNetNetwork, DeepMILClassifier):
    __doc__ = MiNetNetwork.__doc__


class MiNetSurvival(MiNetNetwork, DeepMILSurvival):
    __doc__ = MiNetNetwork.__doc__


class MiNetRegressor(MiNetNetwork, DeepMILRegressor):
    __doc__ = MiNetNetwork.__doc__


class MINetClassifier(MINetNetwork, DeepMILClassifier):
    __doc__ = MINetNetwork.__doc__


class MINetSurvival(MINetNetwork, DeepMILSurvival):
    __doc__ = MINetNetwork.__doc__


class MINetRegressor(MINetNetwork, DeepMILRegressor):
    __doc__ = MINetNetwork.__doc__


class TransMILClassifier(TransMILNetwork, DeepMILClassifier):
    __doc__ = TransMILNetwork.__doc__


class TransMILSurvival(TransMILNetwork, DeepMILSurvival):
    __doc__ = TransMILNetwork.__doc__


class TransMILRegressor(TransMILNetwork, DeepMILRegressor):
    __doc__ = TransMILNetwork.__doc__


class DSMILClassifier(DSMILNetwork, DeepMILClassifier):
    __doc__ = DSMILNetwork.__doc__


class DSMILSurvival(DSMILNetwork, DeepMILSurvival):
    __doc__ = DSMILNetwork.__doc__


class DSMILRegressor(DSMILNetwork, DeepMILRegressor):
    __doc__ = DSMILNetwork.__doc__
