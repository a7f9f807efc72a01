"""MILES (Chen, Bi & Wang 2006): a bag becomes its similarity to every concept instance, a 1-norm SVM
selects the few concepts that matter, and a bag is explained by the instance that carries them. The survival
and regression learners put their heads on the same similarities.

The similarity of bag ``B_i`` to concept ``c_k`` is ``s(c_k, B_i) = max_j exp(-||x_ij - c_k||^2 / sigma^2)``
(the paper's section 3.1); here ``sigma^2 = n_features / gamma``, so that ``gamma`` means the same on data of
any width. The squared distances are computed in blocks of whole bags with ``automil.kernels``, so memory
stays ``O(block * n_concepts)``.
"""

from __future__ import annotations

import numpy as np
from sklearn.svm import LinearSVC

import automil
from automil import BagClassifier
from automil.kernels import squared_distances
from automil_embedding.embedded import BagVectors
from automil_embedding.heads import EmbeddedRegressor, EmbeddedSurvival

__all__ = ["MILES", "MilesRegressor", "MilesSurvival", "nearest_distances"]

# Instances x concepts doubles per block of squared distances (32 MB).
_BLOCK_ENTRIES = 4_000_000


def _bag_blocks(offsets, n_concepts):
    """Consecutive runs of whole bags holding about ``_BLOCK_ENTRIES / n_concepts`` instances each."""
    rows = max(1, _BLOCK_ENTRIES // max(n_concepts, 1))
    cuts = np.searchsorted(offsets, np.arange(0, offsets[-1], rows), side="right") - 1
    edges = np.unique(np.concatenate((cuts, [len(offsets) - 1])))
    return zip(edges[:-1], edges[1:])


def nearest_distances(bags, concepts, with_ties=False):
    """Per bag and concept the smallest squared distance from the bag's instances to the concept, shape
    ``(n_bags, n_concepts)``; ``with_ties`` also yields, per block, the instances that reach it."""
    best = np.empty((bags.n_bags, concepts.shape[0]))
    ties = []
    for first, last in _bag_blocks(bags.offsets, concepts.shape[0]):
        lo, hi = bags.offsets[first], bags.offsets[last]
        D = squared_distances(bags.X[lo:hi], concepts)
        starts = bags.offsets[first:last] - lo
        best[first:last] = np.minimum.reduceat(D, starts, axis=0)
        if with_ties:
            reached = D == np.repeat(best[first:last], np.diff(bags.offsets[first:last + 1]), axis=0)
            ties.append((first, last, reached.astype(np.float64)))
    return (best, ties) if with_ties else best


class ConceptSimilarity:
    """The embedding: each bag's similarity to the concepts, every training instance up to ``max_concepts``
    of them (above, a random sample of that many drawn with ``random_state``); ``gamma`` sets the width."""

    accepts_sparse = True

    def _fit_embedding(self, bags):
        if self.max_concepts < 1:
            raise ValueError(f"max_concepts must be at least 1, got {self.max_concepts}")
        rows = np.arange(bags.n_instances)
        if bags.n_instances > self.max_concepts:
            rows = np.sort(np.random.default_rng(self.random_state).choice(rows, self.max_concepts, replace=False))
        self.concepts_ = bags.X[rows]
        return self._embed(bags)

    def _embed(self, bags):
        return self._similarity(bags, self.concepts_)

    def _similarity(self, bags, concepts, distances=None):
        if distances is None:
            distances = nearest_distances(bags, concepts)
        return np.exp(-self.gamma / bags.n_features * distances)


class MILES(ConceptSimilarity, BagVectors, BagClassifier):
    """MILES: a 1-norm linear SVM on the bags' similarities to concept instances.

    The paper's 1-norm SVM is a linear program with the hinge loss; here it is scikit-learn's
    ``LinearSVC(penalty="l1", dual=False)`` (liblinear), which has the same L1 penalty, and so the same
    sparse choice of concepts, with the squared hinge loss. One-vs-rest for more than two classes.

    Parameters
    ----------
    gamma : float, default=1.0
        Similarity width: ``sigma^2 = n_features / gamma`` on (standardized) instances.
    C : float, default=1.0
        Inverse strength of the L1 penalty: smaller C, fewer concepts.
    max_concepts : int, default=5000
        All training instances are concepts up to this many; above, a random sample of this size.
    random_state : int or None, default=None
        Draws the concept sample.

    Attributes
    ----------
    concepts_ : ndarray or sparse matrix of shape (n_selected, n_features)
        The concepts with a non-zero weight for some class (the others never change a score).
    coef_ : ndarray of shape (n_classes, n_selected)
        Weight of each selected concept per class (binary: ``[-w, w]``).
    covariate_coef_ : ndarray of shape (n_classes, n_covariates)
        Weight of each (standardized) bag covariate per class; no columns for bags without covariates.
    intercept_ : ndarray of shape (n_classes,)
    """

    def __init__(self, gamma=1.0, C=1.0, max_concepts=5000, random_state=None):
        self.gamma = gamma
        self.C = C
        self.max_concepts = max_concepts
        self.random_state = random_state

    def _fit(self, bags, y):
        # Centred columns: liblinear's L1 solver converges several times faster on them (similarities are
        # all positive and strongly correlated); the centring is folded back into the intercept, so the
        # model is the paper's linear function of the similarities.
        S = self._fit_vectors(bags)
        centre = S.mean(axis=0)
        svm = LinearSVC(penalty="l1", dual=False, C=self.C, random_state=self.random_state).fit(S - centre, y)
        coef, intercept = svm.coef_, svm.intercept_ - svm.coef_ @ centre
        if len(self.classes_) == 2:
            coef, intercept = np.vstack((-coef, coef)), np.concatenate((-intercept, intercept))
        n_concepts = self.concepts_.shape[0]
        selected = np.flatnonzero(np.any(coef[:, :n_concepts] != 0, axis=0))
        self.concepts_, self.coef_, self.intercept_ = self.concepts_[selected], coef[:, selected], intercept
        self.covariate_coef_ = coef[:, n_concepts:]

    def transform(self, bags):
        """The bags' similarities to the selected concepts, shape ``(n_bags, n_selected)``."""
        bags = self._check_predict(bags)
        return self._embed(bags)

    def _decision_function(self, bags):
        return self._scores(bags, self._embed(bags))

    def _scores(self, bags, similarities):
        covariates = self._with_covariates(np.empty((bags.n_bags, 0)), bags)
        return similarities @ self.coef_.T + covariates @ self.covariate_coef_.T + self.intercept_

    def _witness(self, bags):
        """The paper's instance classification (section 4.5): concept ``k`` credits its score term
        ``w_k s(c_k, B_i)`` to the instance of ``B_i`` nearest to it (shared equally on ties); the witness
        is the instance with the largest credit for the predicted class."""
        distances, blocks = nearest_distances(bags, self.concepts_, with_ties=True)
        terms = self._similarity(bags, self.concepts_, distances)
        predicted = np.argmax(self._scores(bags, terms), axis=1)
        terms *= self.coef_[predicted]
        credit = np.empty(bags.n_instances)
        for first, last, ties in blocks:
            sizes = np.diff(bags.offsets[first:last + 1])
            starts = bags.offsets[first:last] - bags.offsets[first]
            shares = terms[first:last] / np.add.reduceat(ties, starts, axis=0)
            credit[bags.offsets[first]:bags.offsets[last]] = np.einsum(
                "ik,ik->i", ties, np.repeat(shares, sizes, axis=0))
        return automil.bag_max(bags.offsets, credit)[1]


class MilesSurvival(ConceptSimilarity, EmbeddedSurvival):
    """A survival head (:class:`~automil_embedding.heads.EmbeddedSurvival`, whose parameters it takes) on the
    similarities to MILES's concepts (``gamma``, ``max_concepts``, as :class:`MILES`); the lasso end of the
    Cox head's elastic net picks few concepts, as MILES's 1-norm SVM does."""

    def __init__(self, gamma=1.0, max_concepts=5000, head="coxnet", penalty=0.1, l1_ratio=0.5, n_estimators=200,
                 min_samples_leaf=5, max_features="sqrt", random_state=None, n_jobs=None):
        super().__init__(head, penalty, l1_ratio, n_estimators, min_samples_leaf, max_features, random_state, n_jobs)
        self.gamma = gamma
        self.max_concepts = max_concepts


class MilesRegressor(ConceptSimilarity, EmbeddedRegressor):
    """A regression head (:class:`~automil_embedding.heads.EmbeddedRegressor`, whose parameters it takes) on
    the similarities to MILES's concepts (``gamma``, ``max_concepts``, as :class:`MILES`)."""

    def __init__(self, gamma=1.0, max_concepts=5000, head="ridge", alpha=1.0, learning_rate=0.1, n_estimators=100,
                 max_depth=3, random_state=None):
        super().__init__(head, alpha, learning_rate, n_estimators, max_depth, random_state)
        self.gamma = gamma
        self.max_concepts = max_concepts
