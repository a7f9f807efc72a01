"""The shared shape of an embedded-space learner: fit an embedding of bags into vectors, then an ordinary
classifier on the vectors; a bag's scores are the classifier's scores of its vector."""

from __future__ import annotations

import numpy as np

from automil import BagClassifier


class EmbeddedClassifier(BagClassifier):
    """Base of the learners that classify a fixed-length vector per bag.

    A subclass implements ``_fit_embedding(bags)`` (learns what the embedding needs, e.g. codewords, and
    returns the training vectors), ``_embed(bags)`` and ``_make_classifier(n_columns)``.
    """

    def _fit(self, bags, y):
        Z = self._fit_embedding(bags)
        self.classifier_ = self._make_classifier(Z.shape[1]).fit(Z, y)

    def transform(self, bags):
        """The bags' vectors in the fitted embedding, shape ``(n_bags, n_columns)``."""
        return self._embed(self._check_predict(bags))

    def _decision_function(self, bags):
        Z = self._embed(bags)
        if hasattr(self.classifier_, "decision_function"):
            return self.classifier_.decision_function(Z)
        return self.classifier_.predict_proba(Z)


def power_l2_normalize(Z: np.ndarray) -> np.ndarray:
    """Signed square root, then unit L2 norm per row (Perronnin et al. 2010); an all-zero row stays zero.

    The square root damps the few large components that frequent instances produce, the L2 norm makes
    bags of different sizes comparable."""
    Z = np.sign(Z) * np.sqrt(np.abs(Z))
    norms = np.linalg.norm(Z, axis=1, keepdims=True)
    return Z / np.where(norms > 0, norms, 1.0)
