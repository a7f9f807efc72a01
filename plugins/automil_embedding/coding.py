"""miVLAD and miFV (Wei, Wu & Zhou 2017): a codebook learned on all training instances, each bag encoded by
how its instances deviate from the codewords, power and L2 normalization, then a linear SVM (or a survival or
regression head).

Both encodings are sums over a bag's instances of per-codeword statistics weighted by the instance's
assignment to the codeword (hard for VLAD, the Gaussian posterior for Fisher vectors), so encoding costs
``O(n_instances * n_codewords * n_features)``: linear in instances. The codebook is fitted by k-means
(mini-batch above ``MINIBATCH_ABOVE`` instances) or by EM on a sample of at most ``GMM_SAMPLE`` instances,
so fitting stays linear too. miFV streams (``accepts_streamed``): its sample and its codes are read from
the run's matrix a block of bags at a time, the same figures as from the gathered fold.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.mixture import GaussianMixture
from sklearn.svm import LinearSVC

from automil import StreamedBags
from automil_embedding.embedded import EmbeddedClassifier, power_l2_normalize
from automil_embedding.heads import EmbeddedRegressor, EmbeddedSurvival

__all__ = ["MiVLAD", "MiFV", "MiVLADSurvival", "MiVLADRegressor", "MiFVSurvival", "MiFVRegressor", "vlad",
           "cell_counts", "fisher_vector"]

MINIBATCH_ABOVE = 20_000
GMM_SAMPLE = 20_000


def _weighted_sums(bags, weights, values):
    """Per bag and codeword ``sum_j weights[j, c] * values[j]``, shape ``(n_bags, n_codewords, width)``,
    as one sparse product per codeword."""
    pooling = sp.csr_matrix((np.ones(bags.n_instances), (bags.bag_index, np.arange(bags.n_instances))),
                            shape=(bags.n_bags, bags.n_instances))
    return np.stack([pooling @ (weights[:, [c]] * values) for c in range(weights.shape[1])], axis=1)


def vlad(bags, centers, assignment):
    """VLAD: per codeword, the sum of the residuals ``x - center`` of the bag's instances assigned to it;
    shape ``(n_bags, n_codewords * n_features)``, before normalization. One sparse product: row
    ``bag * n_codewords + codeword`` sums the instances of that bag assigned to that codeword."""
    k = len(centers)
    cell = bags.bag_index * k + assignment
    pooling = sp.csr_matrix((np.ones(bags.n_instances), (cell, np.arange(bags.n_instances))),
                            shape=(bags.n_bags * k, bags.n_instances))
    counts = cell_counts(bags, assignment, k).reshape(-1, 1)
    residuals = pooling @ bags.X - counts * np.tile(centers, (bags.n_bags, 1))
    return residuals.reshape(bags.n_bags, -1)


def cell_counts(bags, assignment, k):
    """Per bag, how many of its instances are assigned to each of the ``k`` codewords, ``(n_bags, k)``."""
    return np.bincount(bags.bag_index * k + assignment, minlength=bags.n_bags * k).reshape(bags.n_bags, k)


def fisher_vector(bags, mixture):
    """The Fisher vector of each bag under a diagonal Gaussian mixture (Perronnin et al. 2010): gradients
    of the bag's mean log-likelihood with respect to the means and standard deviations, whitened by the
    Fisher information; shape ``(n_bags, 2 * n_components * n_features)``, before normalization."""
    posterior = mixture.predict_proba(bags.X)
    means, sigma = mixture.means_, np.sqrt(mixture.covariances_)
    weights = mixture.weights_[None, :, None]
    size = bags.sizes[:, None, None].astype(np.float64)
    count = _weighted_sums(bags, posterior, np.ones((bags.n_instances, 1)))
    first = _weighted_sums(bags, posterior, bags.X)
    second = _weighted_sums(bags, posterior, bags.X * bags.X)
    centred_first = first - count * means
    centred_second = second - 2 * means * first + count * means ** 2
    d_means = centred_first / sigma / (size * np.sqrt(weights))
    d_sigmas = (centred_second / sigma ** 2 - count) / (size * np.sqrt(2 * weights))
    return np.concatenate((d_means.reshape(bags.n_bags, -1), d_sigmas.reshape(bags.n_bags, -1)), axis=1)


class Codebook:
    """The embedding of both: a codebook of ``n_codewords`` (at most the number of training instances) fitted
    by ``_fit_codebook(bags, k)``, each bag's code power- and L2-normalized (``_encode(bags)``)."""

    def _fit_embedding(self, bags):
        if self.n_codewords < 1:
            raise ValueError(f"n_codewords must be at least 1, got {self.n_codewords}")
        self.codebook_ = self._fit_codebook(bags, min(self.n_codewords, bags.n_instances))
        return self._embed(bags)

    def _embed(self, bags):
        return power_l2_normalize(self._encode(bags))


class VLADCodes(Codebook):
    """miVLAD's embedding: VLAD codes over k-means codewords and, with ``counts``, the cell shares.

    VLAD keeps only the residuals, not how many instances fall in each cell, so a lone witness in a cell of
    its own goes unseen; with ``counts`` (our addition, not the paper's) the code also holds the square root
    of the bag's share of instances in each cell (docs/accuracy-embedding.md)."""

    def _fit_codebook(self, bags, k):
        X = bags.X
        if len(X) > MINIBATCH_ABOVE:
            return MiniBatchKMeans(k, batch_size=4096, n_init=3, random_state=self.random_state).fit(X)
        return KMeans(k, n_init=3, random_state=self.random_state).fit(X)

    def _embed(self, bags):
        centers, assignment = self.codebook_.cluster_centers_, self.codebook_.predict(bags.X)
        code = power_l2_normalize(vlad(bags, centers, assignment))
        if not self.counts:
            return code
        shares = cell_counts(bags, assignment, len(centers)) / bags.sizes[:, None]
        return np.hstack((code, np.sqrt(shares)))  # unit L2 norm, as the normalized code beside it


class FisherCodes(Codebook):
    """miFV's embedding: Fisher vectors over a diagonal Gaussian mixture fitted by EM on a sample of at most
    ``GMM_SAMPLE`` instances."""

    accepts_streamed = True

    def _fit_codebook(self, bags, k):
        n = bags.n_instances
        rows = np.arange(n) if n <= GMM_SAMPLE else np.sort(
            np.random.default_rng(self.random_state).choice(n, GMM_SAMPLE, replace=False))
        if isinstance(bags, StreamedBags):  # the same sample, read from the run's matrix
            bag = np.searchsorted(bags.offsets, rows, side="right") - 1
            X = bags.take(bag, rows - bags.offsets[bag])
        else:
            X = bags.X[rows] if n > GMM_SAMPLE else bags.X
        return GaussianMixture(k, covariance_type="diag", reg_covar=1e-4, random_state=self.random_state).fit(X)

    def _encode(self, bags):
        if isinstance(bags, StreamedBags):  # a bag's code needs only its own rows: a block of bags at a time
            return np.vstack([fisher_vector(block, self.codebook_) for block in bags.blocks()])
        return fisher_vector(bags, self.codebook_)


class _CodebookClassifier(EmbeddedClassifier):
    """A linear SVM (scikit-learn ``LinearSVC``, one-vs-rest) on power- and L2-normalized bag codes.

    Parameters
    ----------
    n_codewords : int
        Codewords (k-means centres or mixture components); at most the number of training instances.
    C : float
        Inverse regularization strength of the linear SVM.
    random_state : int or None, default=None
        Seeds the codebook and the SVM.

    The defaults differ per encoding (chosen on other data, docs/accuracy-embedding.md).
    """

    def _make_classifier(self, n_columns):
        return LinearSVC(C=self.C, random_state=self.random_state)


class MiVLAD(VLADCodes, _CodebookClassifier):
    """miVLAD (Wei, Wu & Zhou 2017): VLAD codes over k-means codewords, then a linear SVM.

    Parameters: ``n_codewords``, ``C``, ``random_state`` (see the module's ``_CodebookClassifier``) and
    ``counts`` (see :class:`VLADCodes`).

    Attributes
    ----------
    codebook_ : KMeans or MiniBatchKMeans
    classifier_ : LinearSVC
    """

    def __init__(self, n_codewords=8, C=1.0, counts=True, random_state=None):
        self.n_codewords = n_codewords
        self.C = C
        self.counts = counts
        self.random_state = random_state


class MiFV(FisherCodes, _CodebookClassifier):
    """miFV (Wei, Wu & Zhou 2017): Fisher vectors over a diagonal Gaussian mixture, then a linear SVM.

    Parameters: ``n_codewords`` (mixture components, default 2), ``C`` (default 1.0), ``random_state``; see
    the module's ``_CodebookClassifier``.

    Attributes
    ----------
    codebook_ : GaussianMixture (diagonal covariances)
    classifier_ : LinearSVC
    """

    def __init__(self, n_codewords=2, C=1.0, random_state=None):
        self.n_codewords = n_codewords
        self.C = C
        self.random_state = random_state


class MiVLADSurvival(VLADCodes, EmbeddedSurvival):
    """A survival head (:class:`~automil_embedding.heads.EmbeddedSurvival`, whose parameters it takes) on
    miVLAD's codes (``n_codewords``, ``counts``, as :class:`MiVLAD`)."""

    def __init__(self, n_codewords=8, counts=True, head="coxnet", penalty=0.1, l1_ratio=0.5, n_estimators=200,
                 min_samples_leaf=5, max_features="sqrt", random_state=None, n_jobs=None):
        super().__init__(head, penalty, l1_ratio, n_estimators, min_samples_leaf, max_features, random_state, n_jobs)
        self.n_codewords = n_codewords
        self.counts = counts


class MiVLADRegressor(VLADCodes, EmbeddedRegressor):
    """A regression head (:class:`~automil_embedding.heads.EmbeddedRegressor`, whose parameters it takes) on
    miVLAD's codes (``n_codewords``, ``counts``, as :class:`MiVLAD`)."""

    def __init__(self, n_codewords=8, counts=True, head="ridge", alpha=1.0, learning_rate=0.1, n_estimators=100,
                 max_depth=3, random_state=None):
        super().__init__(head, alpha, learning_rate, n_estimators, max_depth, random_state)
        self.n_codewords = n_codewords
        self.counts = counts


class MiFVSurvival(FisherCodes, EmbeddedSurvival):
    """A survival head (:class:`~automil_embedding.heads.EmbeddedSurvival`, whose parameters it takes) on
    miFV's Fisher vectors (``n_codewords``, as :class:`MiFV`)."""

    def __init__(self, n_codewords=2, head="coxnet", penalty=0.1, l1_ratio=0.5, n_estimators=200,
                 min_samples_leaf=5, max_features="sqrt", random_state=None, n_jobs=None):
        super().__init__(head, penalty, l1_ratio, n_estimators, min_samples_leaf, max_features, random_state, n_jobs)
        self.n_codewords = n_codewords


class MiFVRegressor(FisherCodes, EmbeddedRegressor):
    """A regression head (:class:`~automil_embedding.heads.EmbeddedRegressor`, whose parameters it takes) on
    miFV's Fisher vectors (``n_codewords``, as :class:`MiFV`)."""

    def __init__(self, n_codewords=2, head="ridge", alpha=1.0, learning_rate=0.1, n_estimators=100, max_depth=3,
                 random_state=None):
        super().__init__(head, alpha, learning_rate, n_estimators, max_depth, random_state)
        self.n_codewords = n_codewords
