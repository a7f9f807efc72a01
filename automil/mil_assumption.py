"""Does a learner respect the MIL assumption it claims? Algorithmic unit tests after Raff & Holt (NeurIPS 2023).

Every test builds bags whose labels follow a known rule, fits the learner on them and checks it on bags
where a shortcut and the rule disagree. Instances are Gaussian noise in :data:`N_FEATURES` dimensions; a
*concept* ``c`` is one instance shifted by :data:`SHIFT` along feature ``c``.

- **Presence** (the standard assumption): a bag is positive iff it holds concept 0. In training every
  negative bag also holds concept 1 (a *poison* only negative bags carry); in the test the poison moves to
  the positive bags. A learner that reads the absence of the poison as evidence for the positive class, as
  a bag-level summary can, calls the test's negatives positive and its positives negative.
- **Threshold** (a bag is positive iff it holds concepts 0 *and* 1; one of them alone is negative): no
  learner that scores a bag by its best instance can pass, so passing it shows a learner that looks at
  more than the standard assumption allows (Foulds & Frank's collective and threshold assumptions).
- **Order**: a bag is a set; reversing and shuffling its instances changes no score (and, reported but
  not required, fitting on reordered bags changes no prediction).

Used by :func:`automil.checks.learner_checks` (presence and order for learners that declare
``standard_mil``, order for all) and by :func:`assumption_report` for the table of docs/algorithms.md.
"""

from __future__ import annotations

import numpy as np

from automil.bags import Bags

__all__ = ["N_FEATURES", "SHIFT", "concept_bags", "presence_accuracy", "threshold_accuracy",
           "order_effects", "check_presence_not_absence", "check_instance_order_does_not_matter",
           "assumption_report", "PASS_ACCURACY", "ORDER_TOLERANCE"]

N_FEATURES = 5
SHIFT = 5.0
N_PER_CLASS = 20
PASS_ACCURACY = 0.8  # a learner that learned the rule; the shortcut of each test scores near 0 or 0.5


def concept_bags(concepts: list[tuple[int, ...]], labels, seed: int) -> Bags:
    """Bags of 3 to 6 noise instances, bag ``i`` with one planted instance per concept in ``concepts[i]``
    (at random places among the noise). ``instance_y`` marks the planted instances of concept 0."""
    rng = np.random.default_rng(seed)
    rows = []
    instance_y = []
    for planted in concepts:
        noise = rng.normal(0.0, 1.0, (int(rng.integers(3, 7)), N_FEATURES))
        shifted = rng.normal(0.0, 1.0, (len(planted), N_FEATURES))
        shifted[np.arange(len(planted)), list(planted)] += SHIFT
        bag = np.vstack((noise, shifted))
        marks = np.r_[np.zeros(len(noise)), [c == 0 for c in planted]]
        order = rng.permutation(len(bag))
        rows.append(bag[order])
        instance_y.append(marks[order])
    return Bags.from_list(rows, np.asarray(labels), instance_y=np.concatenate(instance_y).astype(np.int64))


def _labels(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).permutation(np.repeat([0, 1], N_PER_CLASS))


def _presence_data(seed: int) -> tuple[Bags, Bags]:
    """Train: positives hold concept 0, negatives the poison (concept 1). Test: positives hold both,
    negatives neither."""
    train_y, test_y = _labels(seed), _labels(seed + 1)
    train = concept_bags([(0,) if label else (1,) for label in train_y], train_y, seed)
    test = concept_bags([(0, 1) if label else () for label in test_y], test_y, seed + 1)
    return train, test


def _threshold_data(seed: int) -> tuple[Bags, Bags]:
    """Positives hold concepts 0 and 1; negatives one of the two (alternately) or, one in three, neither."""
    def bags(y, s):
        negatives = iter([(0,), (1,), ()] * N_PER_CLASS)
        return concept_bags([(0, 1) if label else next(negatives) for label in y], y, s)

    train_y, test_y = _labels(seed), _labels(seed + 1)
    return bags(train_y, seed), bags(test_y, seed + 1)


def _balanced_accuracy(estimator, test: Bags) -> float:
    predicted = np.asarray(estimator.predict(test))
    return float(np.mean([np.mean(predicted[test.y == c] == c) for c in (0, 1)]))


def presence_accuracy(make_estimator, seed: int = 0) -> float:
    """Balanced accuracy of the presence test: near 1 for a learner of the standard assumption, near 0 for
    one that learned the poison's absence."""
    train, test = _presence_data(seed)
    return _balanced_accuracy(make_estimator().fit(train, train.y), test)


def threshold_accuracy(make_estimator, seed: int = 0) -> float:
    """Balanced accuracy of the threshold test (two concepts needed): at most about 0.75 for a learner of
    the standard assumption (a negative bag with one concept looks positive to it)."""
    train, test = _threshold_data(seed)
    return _balanced_accuracy(make_estimator().fit(train, train.y), test)


def _shuffled(bags: Bags, seed: int) -> Bags:
    """The same bags with every bag's instances in another order (reversed, then shuffled)."""
    rng = np.random.default_rng(seed)
    rows = [bags[i][::-1][rng.permutation(bags.sizes[i])] for i in range(bags.n_bags)]
    return Bags.from_list(rows, bags.y)


def order_effects(make_estimator, seed: int = 0) -> tuple[float, float]:
    """What reordering instances changes: the largest change of a test bag's score when its instances are
    reordered (0 for a set function, up to rounding), and the share of test predictions that change when
    the model is fitted on reordered training bags (0 for a learner whose fit does not follow the
    instance order; a solver stopped at its iteration cap or an initialization by instance position
    does)."""
    train, test = (concept_bags([(0,) if label else () for label in y], y, s)
                   for y, s in ((_labels(seed), seed), (_labels(seed + 1), seed + 1)))
    model = make_estimator().fit(train, train.y)
    scores = np.asarray(model.decision_function(test), dtype=np.float64)
    reordered = np.asarray(model.decision_function(_shuffled(test, seed)), dtype=np.float64)
    score_change = float(np.max(np.abs(scores - reordered)) / (1.0 + np.abs(scores).max()))
    refit = make_estimator().fit(_shuffled(train, seed + 2), train.y)
    changed = float(np.mean(np.asarray(refit.predict(test)) != np.asarray(model.predict(test))))
    return score_change, changed


ORDER_TOLERANCE = 1e-4  # relative score change float32 sums in another order stay far below


def _maker(spec):
    from sklearn.base import clone

    from automil.learner import LearnerSpec

    return spec.build if isinstance(spec, LearnerSpec) else (lambda: clone(spec))


def check_presence_not_absence(spec):
    """Raff & Holt's standard-MIL test: a bag is positive for the witness it holds, not for lacking a
    pattern that only negative training bags carried."""
    accuracy = presence_accuracy(_maker(spec))
    assert accuracy >= PASS_ACCURACY, (
        f"balanced accuracy {accuracy:.2f} (expected >= {PASS_ACCURACY}) when the negative-only pattern of "
        "training moves to the positive bags: the learner uses its absence, not the witness's presence")


def check_instance_order_does_not_matter(spec):
    """A bag is a set: reordering its instances does not change its score."""
    score_change, _ = order_effects(_maker(spec))
    assert score_change <= ORDER_TOLERANCE, (
        f"reordering a bag's instances changes its score (by {score_change:.3g} relative to the largest)")


def assumption_report(spec, seed: int = 0) -> dict:
    """One row of the assumption table: the presence and threshold tests' balanced accuracies and the
    order effects (:func:`order_effects`)."""
    make = _maker(spec)
    score_change, refit_changed = order_effects(make, seed)
    return {"presence": presence_accuracy(make, seed), "threshold": threshold_accuracy(make, seed),
            "order_score_change": score_change, "refit_changed": refit_changed}
