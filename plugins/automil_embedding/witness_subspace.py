"""witness-subspace: the directions along which one class's instances spread further than the others', from
bag-centred instance covariances, and each bag embedded by the tails of its instances' projections on them.

Why: in a cohort of slides every slide of a case is shifted by the case's offset in every direction, while a
few witnesses (1-3% of a tumour slide) move the slide's mean by a few hundredths of that; a learner that reads
uncentred bag statistics fits the tuning cases' offsets. Centred on its own mean, a bag keeps its witnesses'
spread and loses its offset; the generalized eigenvectors of (class covariance, rest covariance) are the
directions of that spread (second-order discriminant directions), and a bag's largest projections on them are
where its witnesses sit. The cost is linear in the instances: one pass for the covariances (a sample of each
bag, read as a few contiguous runs of rows), one pass to embed; memory a d x d matrix per class and a block.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigh
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from automil import StreamedBags, bag_max, run_positions
from automil_embedding.embedded import EmbeddedClassifier
from automil_embedding.heads import EmbeddedRegressor, EmbeddedSurvival

__all__ = ["CENTRES", "WitnessSubspace", "WitnessSubspaceRegressor", "WitnessSubspaceSurvival", "outcome_groups"]

CENTRES = ("bag", "none")


class WitnessProjections:
    """The embedding every task of witness-subspace shares: discriminant directions of bag-centred instance
    covariances between groups of bags (the classes; for an outcome, :func:`outcome_groups`), and each bag's
    tails and spread of projections on them (``n_directions``, ``tail``, ``shrinkage``, ``centre``,
    ``max_instances``, ``random_state`` as :class:`WitnessSubspace`)."""

    accepts_streamed = True

    def _fit_directions(self, bags, groups: np.ndarray, n_groups: int) -> None:
        """``directions_`` from the bags' groups (``-1``: a bag left out of the covariances)."""
        if self.centre not in CENTRES:
            raise ValueError(f"centre must be one of {CENTRES}, got {self.centre!r}")
        bounds = {"tail": (0 < self.tail <= 1, "in (0, 1]"), "shrinkage": (self.shrinkage > 0, "positive"),
                  "n_directions": (self.n_directions >= 1, "at least 1"),
                  "max_instances": (self.max_instances >= 2, "at least 2")}
        for name, (holds, rule) in bounds.items():
            if not holds:
                raise ValueError(f"{name} must be {rule}, got {getattr(self, name)!r}")
        covariances = class_covariances(bags, groups, n_groups, self.centre == "bag", self.max_instances,
                                        np.random.default_rng(self.random_state))
        self.directions_ = discriminant_directions(covariances, self.n_directions, self.shrinkage)

    def _fit_embedding(self, bags):
        return self._embed(bags)

    # Whether the embedding ends with each direction's projection of the bag mean (what centring removes).
    mean_columns = False

    def _embed(self, bags):
        rows = []
        for projections, offsets, means in self._projections(bags):
            for bag, (start, stop) in enumerate(zip(offsets[:-1], offsets[1:])):
                row = tail_embedding(projections[start:stop], self.tail)
                rows.append(np.concatenate((row, means[bag])) if self.mean_columns else row)
        return np.array(rows)

    def _projections(self, bags):
        """Per block of bags, its instances' projections on the directions (centred on their bag's mean when
        ``centre="bag"``), shape ``(block instances, n_directions)``, the block's bag offsets, and its bags'
        mean projections ``(block bags, n_directions)``."""
        streamed = bags if isinstance(bags, StreamedBags) else StreamedBags(bags)
        for block in streamed.blocks():
            projections = block.X @ self.directions_.T.astype(block.X.dtype)
            projections = projections.astype(np.float64)
            means = np.add.reduceat(projections, block.offsets[:-1], axis=0) / block.sizes[:, None]
            if self.centre == "bag":
                projections -= np.repeat(means, block.sizes, axis=0)
            yield projections, block.offsets, means


class WitnessSubspace(WitnessProjections, EmbeddedClassifier):
    """A logistic regression on the tails of bags' projections on discriminant directions of their centred
    instances.

    For each class, the bag-weighted covariance of its bags' instances, each bag centred on its own mean (each
    bag's covariance from at most ``max_instances`` of its rows, every bag of a class counting alike), and the
    ``n_directions`` generalized eigenvectors of (that covariance, the other classes' covariance + a ridge)
    with the largest eigenvalues: the directions where the class's instances reach furthest beyond what the
    other classes' do, one-vs-rest, concatenated over the classes (two sets for two classes, since a
    direction of the negative class can tell as well). A bag's embedding is, for each direction, the mean of
    its top ``tail`` share of centred projections, the same of their negatives (a direction's sign is
    arbitrary), and the projections' standard deviation; a standardized logistic regression classifies it.

    Parameters
    ----------
    n_directions : int, default=4
        Directions per class (at most the features).
    tail : float, default=0.01
        The share of a bag's instances whose projections are averaged at each end (at least one instance).
    shrinkage : float, default=1.0
        The ridge added to the other classes' covariance, as a fraction of its mean variance (the same meaning
        on features of any scale): small finds faint directions, large keeps noise directions out.
    C : float, default=1.0
        Inverse regularization strength of the logistic regression.
    centre : {"bag", "none"}, default="bag"
        ``"bag"``: each bag centred on its own mean (its offset removed); ``"none"``: instances as they are,
        the spread of the bag means counting in the covariances.
    max_instances : int, default=2048
        Rows of a bag its covariance is estimated from: a larger bag is sampled as a few contiguous runs of
        rows drawn from ``random_state`` (a bag mapped from disk is read as a few sequential reads). The
        embedding reads every instance.
    random_state : int or None, default=None

    Attributes
    ----------
    directions_ : ndarray of shape (n_classes * n_directions, n_features)
        Unit directions, class by class.
    classifier_ : Pipeline
        The scaler and logistic regression on the embedding (then the bag covariates, if any).
    """

    def __init__(self, n_directions=1, tail=0.01, shrinkage=1.0, C=1.0, centre="bag", max_instances=2048,
                 random_state=None):
        self.n_directions = n_directions
        self.tail = tail
        self.shrinkage = shrinkage
        self.C = C
        self.centre = centre
        self.max_instances = max_instances
        self.random_state = random_state

    def _fit(self, bags, y):
        if not self.C > 0:
            raise ValueError(f"C must be positive, got {self.C!r}")
        self._fit_directions(bags, y, len(self.classes_))
        super()._fit(bags, y)

    def _make_classifier(self, n_columns):
        return make_pipeline(StandardScaler(), LogisticRegression(C=self.C, max_iter=2000))

    def _instance_scores(self, bags):
        """An instance's score for a class is its strongest single piece of tail evidence: the largest, over
        the directions and their two signs, of its centred projection in that sign times the head's
        coefficient on that tail's column (per unit of projection). Not the head applied to the instance (a
        bag's tails and spread are not an instance's), but the instance whose projection would weigh most if
        it stood in a tail; the standard deviations' and covariates' columns do not count. One column for two
        classes (the positive class's margin)."""
        scaler, logistic = self.classifier_[0], self.classifier_[-1]
        n = len(self.directions_)
        weights = (logistic.coef_ / scaler.scale_)[:, :2 * n]  # (margins, 2n): upper tails, then lower tails
        scores = []
        for projections, _, _ in self._projections(bags):
            signed = np.hstack((projections, -projections))  # (instances, 2n), as the tail columns read them
            scores.append(np.max(signed[:, None, :] * weights[None], axis=2))
        scores = np.concatenate(scores)
        return scores[:, 0] if len(self.classes_) == 2 else scores

    def _witness(self, bags):
        """The instance with the largest score (:meth:`_instance_scores`) for the bag's predicted class."""
        margins = self._class_columns(self._decision_function(bags), "_decision_function", bags.n_bags, "bags")
        scores = self._class_columns(self._instance_scores(bags), "_instance_scores", bags.n_instances, "instances")
        _, where = bag_max(bags.offsets, scores)
        predicted = np.argmax(margins, axis=1)
        return where[np.arange(bags.n_bags), predicted]

class WitnessSubspaceSurvival(WitnessProjections, EmbeddedSurvival):
    """A survival head (:class:`~automil_embedding.heads.EmbeddedSurvival`, whose parameters it takes) on
    witness-subspace's embedding (its parameters as :class:`WitnessSubspace`), the directions those that tell
    the bags with an early event from those followed past it (:func:`outcome_groups`)."""

    mean_columns = True

    def __init__(self, n_directions=1, tail=0.01, shrinkage=1.0, centre="bag", max_instances=2048, head="coxnet",
                 penalty=0.1, l1_ratio=0.5, n_estimators=200, min_samples_leaf=5, max_features="sqrt",
                 random_state=None, n_jobs=None):
        super().__init__(head, penalty, l1_ratio, n_estimators, min_samples_leaf, max_features, random_state, n_jobs)
        self.n_directions = n_directions
        self.tail = tail
        self.shrinkage = shrinkage
        self.centre = centre
        self.max_instances = max_instances

    def _fit(self, bags, time, event):
        self._fit_directions(bags, outcome_groups(time, event), 2)
        super()._fit(bags, time, event)


class WitnessSubspaceRegressor(WitnessProjections, EmbeddedRegressor):
    """A regression head (:class:`~automil_embedding.heads.EmbeddedRegressor`, whose parameters it takes) on
    witness-subspace's embedding (its parameters as :class:`WitnessSubspace`), the directions those that tell
    the bags above the median target from those below it (:func:`outcome_groups`)."""

    mean_columns = True

    def __init__(self, n_directions=1, tail=0.01, shrinkage=1.0, centre="bag", max_instances=2048, head="ridge",
                 alpha=1.0, learning_rate=0.1, n_estimators=100, max_depth=3, random_state=None):
        super().__init__(head, alpha, learning_rate, n_estimators, max_depth, random_state)
        self.n_directions = n_directions
        self.tail = tail
        self.shrinkage = shrinkage
        self.centre = centre
        self.max_instances = max_instances

    def _fit(self, bags, target):
        self._fit_directions(bags, outcome_groups(target), 2)
        super()._fit(bags, target)


def outcome_groups(target: np.ndarray, event: np.ndarray | None = None) -> np.ndarray:
    """The two groups of bags whose covariances give an outcome's directions: the endpoint dichotomized at its
    median, the usual way to ask a discriminant for the directions of a continuous outcome. A regression target:
    1 above the median, 0 at or below it (1 at the median when no target lies above it). A survival time
    (``event`` given): 1 for an event at or before the median event time, 0 for a bag followed past it (event
    or not); -1, left out, for a bag censored before it, whose group is unknown."""
    target = np.asarray(target, dtype=np.float64)
    if event is None:
        median = np.median(target)
        above = target > median if (target > median).any() else target >= median
        if above.all():
            raise ValueError("the regression target is the same for every bag: no directions tell its bags apart")
        return above.astype(np.int64)
    event = np.asarray(event, dtype=bool)
    median = np.median(target[event])
    groups = np.where(target > median, 0, np.where(event, 1, -1))
    if not (groups == 0).any():
        raise ValueError(f"no bag is followed past the median event time {median:g}: no directions tell early "
                         "events from late ones")
    return groups


def tail_embedding(projections: np.ndarray, tail: float) -> np.ndarray:
    """One bag's embedding from its projections ``(instances, directions)``: per direction the mean of the top
    ``tail`` share (at least one), the mean of the top share of the negatives, then the standard deviations."""
    n = len(projections)
    k = max(1, int(np.ceil(tail * n)))
    upper = np.partition(projections, n - k, axis=0)[n - k:].mean(axis=0)
    lower = -np.partition(projections, k - 1, axis=0)[:k].mean(axis=0)
    return np.concatenate((upper, lower, projections.std(axis=0)))


def class_covariances(bags, y, n_classes: int, centre_bags: bool, max_instances: int,
                      rng: np.random.Generator) -> np.ndarray:
    """Each class's bag-weighted instance covariance, shape ``(n_classes, d, d)``: the mean over its bags (a bag
    of class ``-1`` is left out) of each bag's covariance about its own mean (at most ``max_instances`` rows of
    the bag, drawn as a few contiguous runs); without ``centre_bags``, plus the covariance of the class's bag
    means (their offsets).
    One bag read at a time; float64 sums of the float32 (or float16 read as float32) rows' products."""
    d = bags.n_features
    within = np.zeros((n_classes, d, d))
    mean_sum, mean_products = np.zeros((n_classes, d)), np.zeros((n_classes, d, d))
    counts = np.bincount(y[y >= 0], minlength=n_classes)
    for i, size in enumerate(bags.sizes):
        if y[i] < 0:
            continue
        positions = run_positions(int(size), max_instances, rng)
        rows = (bags.take(np.full(len(positions), i), positions) if isinstance(bags, StreamedBags)
                else np.asarray(bags[i][positions]))
        mean = rows.mean(axis=0, dtype=np.float64)
        centred = rows - mean.astype(rows.dtype)
        within[y[i]] += (centred.T @ centred) / len(rows)
        mean_sum[y[i]] += mean
        mean_products[y[i]] += np.outer(mean, mean)
    within /= counts[:, None, None]
    if centre_bags:
        return within
    means = mean_sum / counts[:, None]
    return within + mean_products / counts[:, None, None] - means[:, :, None] * means[:, None, :]


def discriminant_directions(covariances: np.ndarray, n_directions: int, shrinkage: float) -> np.ndarray:
    """Per class, the unit generalized eigenvectors of (its covariance, the mean of the other classes' + a ridge
    of ``shrinkage`` times their mean variance) with the largest eigenvalues, at most one per feature;
    concatenated class by class, shape ``(n_classes * n, d)``."""
    n_classes, d = covariances.shape[:2]
    n = min(n_directions, d)
    directions = []
    for k in range(n_classes):
        rest = np.delete(covariances, k, axis=0).mean(axis=0)
        variance = np.trace(rest) / d
        rest[np.diag_indices(d)] += shrinkage * (variance if variance > 0 else 1.0)
        _, vectors = eigh(covariances[k], rest, subset_by_index=(d - n, d - 1))
        directions.append(vectors[:, ::-1].T)  # the largest eigenvalue first
    directions = np.vstack(directions)
    return directions / np.linalg.norm(directions, axis=1, keepdims=True)
