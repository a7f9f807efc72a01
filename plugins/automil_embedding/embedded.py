"""The shared shape of an embedded-space learner: fit an embedding of bags into vectors, then an ordinary
model on the vectors (a classifier here; the survival and regression heads in :mod:`automil_embedding.heads`);
a bag's prediction is the model's prediction for its vector."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from automil import BagClassifier


class BagVectors:
    """The vectors the model of an embedded-space learner sees: each bag's embedding, then its clinical
    covariates (``bags.covariates``), standardized on the training bags so that no covariate's unit (years,
    a one-hot stage) outweighs the normalized codes.

    A subclass implements ``_fit_embedding(bags)`` (learns what the embedding needs, e.g. codewords, and
    returns the training bags' embedding) and ``_embed(bags)``.
    """

    def _fit_vectors(self, bags):
        Z = self._fit_embedding(bags)
        covariates = getattr(bags, "covariates", None)
        self.covariate_mean_ = self.covariate_scale_ = None
        if covariates is not None:
            scale = covariates.std(axis=0)
            self.covariate_mean_, self.covariate_scale_ = covariates.mean(axis=0), np.where(scale > 0, scale, 1.0)
        return self._with_covariates(Z, bags)

    def _vectors(self, bags):
        return self._with_covariates(self._embed(bags), bags)

    def _with_covariates(self, Z, bags):
        covariates, mean = getattr(bags, "covariates", None), getattr(self, "covariate_mean_", None)
        given, fitted = (0 if c is None else len(c.T) for c in (covariates, mean))
        if given != fitted:
            raise ValueError(f"{type(self).__name__} was fitted on bags with {fitted} covariates, but these bags "
                             f"have {given}")
        if covariates is None:
            return Z
        standardized = (covariates - mean) / self.covariate_scale_
        return sp.hstack((Z, standardized), format="csr") if sp.issparse(Z) else np.hstack((Z, standardized))


class EmbeddedClassifier(BagVectors, BagClassifier):
    """Base of the learners that classify a fixed-length vector per bag: a subclass implements the
    embedding (see :class:`BagVectors`) and ``_make_classifier(n_columns)``."""

    def _fit(self, bags, y):
        Z = self._fit_vectors(bags)
        self.classifier_ = self._make_classifier(Z.shape[1]).fit(Z, y)

    def transform(self, bags):
        """The bags' vectors (embedding and covariates), shape ``(n_bags, n_columns)``."""
        return self._vectors(self._check_predict(bags))

    def _decision_function(self, bags):
        Z = self._vectors(bags)
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


def dense(Z):
    """``Z`` as a dense array (the bag vectors of sparse bags are sparse; some models take only dense ones)."""
    return Z.toarray() if sp.issparse(Z) else Z
