"""The standardizer every learner is fitted through: instance scaling learnt on the training bags only,
in blocks and with streaming statistics, so a fold of a mapped matrix is never copied whole to learn it."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from automil.bags import Bags, as_bags, row_blocks
from automil.learner import BagInput
from automil.streamed_bags import BLOCK_BYTES, StreamedBags, read_dtype

__all__ = ["Standardized", "instance_moments", "instance_scaling", "standardized_rows", "streams"]


def instance_scaling(X, rows=None):
    """Instance-level mean and standard deviation of ``X`` (of its ``rows`` only, when given), in float64
    (docs/algorithms.md 1.5).

    A zero standard deviation becomes 1 so constant features pass through unchanged. For sparse ``X``
    the mean is ``None``: centring would fill in every zero, so sparse data is only scaled. Dense ``X`` is
    read in blocks of rows (gathered from ``rows``), two passes that add each row in turn to float64 sums: the
    figures of ``X[rows].astype(np.float64).mean(axis=0)`` and ``.std(axis=0)`` to the last bit, without a
    copy of the rows or of the matrix in float64 (``X`` may be the run's mapped file, larger than memory).
    """
    if sp.issparse(X):
        X = X if rows is None else X[rows]
        mean = np.asarray(X.mean(axis=0)).ravel()
        var = np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean**2
        scale = np.sqrt(np.maximum(var, 0.0))
        mean = None
    else:
        mean, scale = instance_moments(X, rows)
    scale[scale <= np.finfo(np.float64).eps * (1.0 if mean is None else np.maximum(1.0, np.abs(mean)))] = 1.0
    return mean, scale


def instance_moments(X, rows=None):
    """Float64 mean and standard deviation of the rows of dense ``X`` (its ``rows``), or of the instances of
    :class:`~automil.streamed_bags.StreamedBags` as they are read, a block at a time: the figures of
    ``.astype(np.float64).mean(axis=0)`` and ``.std(axis=0)`` to the last bit, no zero replaced (a learner that
    standardizes again keeps its own rule for them), and no float64 copy of the rows."""
    n = X.n_instances if isinstance(X, StreamedBags) else X.shape[0] if rows is None else len(rows)
    mean = _row_sums(block for block in _blocks(X, rows)) / n
    return mean, np.sqrt(_row_sums(np.square(block - mean) for block in _blocks(X, rows)) / n)


def _blocks(X, rows=None):
    """``X`` (its ``rows``, gathered) a block of rows at a time; streamed bags a block of bags at a time."""
    if isinstance(X, StreamedBags):
        yield from (block.X for block in X.blocks())
        return
    yield from row_blocks(X, rows, BLOCK_BYTES)  # this module's size, which the tests set smaller


def _row_sums(blocks) -> np.ndarray:
    """The float64 sum of the rows of every block, added one row after the other as numpy's sum over
    axis 0 adds them (the running sum is the first row of each block's reduction), so the result does not
    depend on where the blocks end."""
    total = None
    for block in blocks:
        stacked = block if total is None else np.concatenate((total[None], block), dtype=np.float64)
        total = stacked.sum(axis=0, dtype=np.float64)
    return total


def standardized_rows(X: np.ndarray, rows, mean, scale) -> np.ndarray:
    """``(X[rows] - mean) / scale`` of dense ``X``, in its dtype (float16 in float32), made a block at a time into
    one new array: a fold standardized without its unscaled copy."""
    rows = np.asarray(rows, dtype=np.int64)
    out = np.empty((len(rows), X.shape[1]), dtype=read_dtype(X.dtype))
    mean, scale = mean.astype(out.dtype, copy=False), scale.astype(out.dtype, copy=False)
    start = 0
    for block in _blocks(X, rows):
        part = out[start:start + len(block)]
        np.divide(np.subtract(block, mean, out=part), scale, out=part)  # transform's arithmetic, in place
        start += len(block)
    return out


def streams(estimator) -> bool:
    """Whether ``estimator`` takes its bags streamed (:class:`~automil.streamed_bags.StreamedBags`)."""
    return bool(getattr(estimator, "accepts_streamed", False))


def _inner_has(name):
    return lambda self: hasattr(self.estimator_ if hasattr(self, "estimator_") else self.estimator, name)


class Standardized(ClassifierMixin, BaseEstimator):
    """A bag classifier behind instance standardization fitted on its own training bags only.

    This is the unit the evaluation protocols fit on every training fold (so no statistic of a test fold
    ever reaches a fit) and the model that tracking logs (so a loaded model standardizes new bags itself).

    Any scikit-learn-style estimator on bags is a learner: an automil estimator (a :class:`~automil.BagClassifier`,
    a survival model or a regressor: :class:`~automil.learner.BagInput`) receives
    ``automil.Bags``, any other estimator a list of 2-D arrays (one per bag, the format other MIL
    libraries take); both are fitted as ``fit(bags, y)``.

    Parameters
    ----------
    estimator : estimator
        The learner; cloned at ``fit``.

    Attributes
    ----------
    estimator_ : estimator
        The learner fitted on the standardized training bags.
    mean_ : ndarray of shape (n_features,) or None
        Instance mean of the training bags; ``None`` for sparse instances (scaled only).
    scale_ : ndarray of shape (n_features,)
        Instance standard deviation of the training bags, with zeros replaced by 1.
    classes_ : ndarray of shape (n_classes,)
        A classifier's only.
    n_features_in_ : int
    """

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, bags, y=None):
        """Fit the scaling on the instances of ``bags``, then the learner on the scaled bags."""
        bags = as_bags(bags, y)
        self.mean_, self.scale_ = instance_scaling(bags.X)
        self.n_features_in_ = bags.n_features
        scaled, labels = self._learner_input(bags), bags.y
        del bags  # a caller that keeps no reference of its own frees the unscaled instances while the learner fits
        return self._fit_learner(scaled, labels)

    def fit_subset(self, bags: Bags, bag_indices):
        """Fit on the bags at ``bag_indices`` of ``bags`` (a training fold of the run's mapped instances) as
        ``fit(bags.subset(bag_indices))`` does, without the fold's unscaled copy: the statistics in a streaming
        pass over its rows, then the fold standardized a block at a time into the one array the learner gets.
        A learner that accepts streamed bags (``accepts_streamed``) gets the fold as
        :class:`~automil.streamed_bags.StreamedBags` instead, read and standardized a block at a time: the
        same values, never the whole fold in memory.
        """
        bags = as_bags(bags)
        if bags.is_sparse:
            return self.fit(bags.subset(bag_indices))
        rows = bags.instance_rows(np.asarray(bag_indices, dtype=np.int64))
        self.mean_, self.scale_ = instance_scaling(bags.X, rows)
        self.n_features_in_ = bags.n_features
        if streams(self.estimator):
            fold = StreamedBags(bags, bag_indices, self.mean_, self.scale_)
            return self._fit_learner(fold, fold.y)
        fold = bags.subset(bag_indices, X=standardized_rows(bags.X, rows, self.mean_, self.scale_))
        return self._fit_learner(fold if isinstance(self.estimator, BagInput) else fold.to_list(), fold.y)

    def _fit_learner(self, scaled, labels):
        self.estimator_ = clone(self.estimator).fit(scaled, labels)
        if hasattr(self.estimator_, "classes_"):  # a survival model or a regressor has none
            self.classes_ = self.estimator_.classes_
        return self

    def transform(self, bags) -> Bags:
        """The same bags with standardized instances (statistics of the training bags); streamed bags stay
        streamed, standardized as they are read."""
        check_is_fitted(self, "scale_")
        bags = as_bags(bags)
        if bags.n_features != self.n_features_in_:
            raise ValueError(f"bags have {bags.n_features} features, but the standardizer was fitted with "
                             f"{self.n_features_in_}")
        if isinstance(bags, StreamedBags):
            return bags.standardized(self.mean_, self.scale_)
        if bags.is_sparse:
            if self.mean_ is not None:
                X = (bags.X.toarray() - self.mean_) / self.scale_
            else:
                X = bags.X @ sp.diags(1.0 / self.scale_)
        else:  # in the instances' own dtype: float32 bags stay float32 (float16 ones become float32)
            dtype = read_dtype(bags.X.dtype)
            X = bags.X if self.mean_ is None else bags.X - self.mean_.astype(dtype, copy=False)
            X = np.divide(X, self.scale_.astype(dtype, copy=False), out=None if X is bags.X else X)
        return bags.with_instances(X)

    def predict(self, bags) -> np.ndarray:
        """Bag labels."""
        return np.asarray(self.estimator_.predict(self._learner_input(bags)))

    @available_if(_inner_has("decision_function"))
    def decision_function(self, bags) -> np.ndarray:
        """Bag scores of the learner, shape ``(n_bags, n_classes)``."""
        return self.estimator_.decision_function(self._learner_input(bags))

    @available_if(_inner_has("predict_proba"))
    def predict_proba(self, bags) -> np.ndarray:
        """Class probabilities of the learner, shape ``(n_bags, n_classes)``."""
        return self.estimator_.predict_proba(self._learner_input(bags))

    @available_if(_inner_has("predict_survival"))
    def predict_survival(self, bags, times) -> np.ndarray:
        """A survival learner's probability of each bag's event after each of ``times``, shape
        ``(n_bags, len(times))``."""
        return self.estimator_.predict_survival(self._learner_input(bags), times)

    @available_if(_inner_has("_witness"))
    def witness(self, bags) -> np.ndarray:
        """The learner's witness position inside each bag, shape ``(n_bags,)``."""
        return self.estimator_.witness(self._learner_input(bags))

    @available_if(_inner_has("instance_scores"))
    def instance_scores(self, bags) -> np.ndarray:
        """The learner's score of every instance for each class, shape ``(n_instances, n_classes)``."""
        return self.estimator_.instance_scores(self._learner_input(bags))

    def _learner_input(self, bags):
        """The standardized bags as the learner takes them: ``Bags`` (streamed to a learner that accepts them,
        gathered for one that does not) or a list of 2-D arrays."""
        if streams(self.estimator) and isinstance(bags, Bags) and not bags.is_sparse:
            bags = StreamedBags(bags)  # read and standardized as the learner asks: never a copy of every bag
        bags = self.transform(bags)
        if isinstance(bags, StreamedBags) and not streams(self.estimator):
            bags = bags.gathered()
        return bags if isinstance(self.estimator, BagInput) else bags.to_list()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = True
        return tags
