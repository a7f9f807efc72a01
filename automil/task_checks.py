"""The contract suite's checks of a survival or regression learner, on bags whose outcome grows with their
share of witness instances. :func:`automil.checks.learner_checks` runs them for every such task a spec serves
(and the classification checks only where it serves classification)."""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from automil.bags import Bags
from automil.endpoints import regression_labels, survival_labels
from automil.learner import LearnerSpec

__all__ = ["check_outcome_learned", "check_outcome_input", "check_outcome_labels", "estimator_of", "outcome_bags",
           "outcome_score", "OUTCOME_CHECKS"]

SEED = 0
N_FEATURES = 5
# What check_outcome_learned asks of a learner on 60 held-out bags, where the oracle (the true witness share)
# reaches a concordance of about 0.74 and an R^2 of about 0.9: a concordance above the 99th percentile of
# random risks' (about 0.60 on these bags; standard error 0.047) and a quarter of the target's variance.
MIN_CONCORDANCE = 0.6
MIN_R2 = 0.25


def outcome_bags(n_bags: int, task: str, seed: int = SEED) -> Bags:
    """``n_bags`` bags of 3 to 10 Gaussian instances, each with a share (0 to 0.8) of witnesses shifted by 3
    along feature 0. Survival: exponential event times whose hazard is ``exp(5 share)`` (proportional hazards),
    about a sixth censored at a uniform follow-up; regression: the target is ``2 share`` plus noise of
    standard deviation 0.2."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 11, n_bags)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    X = rng.normal(0.0, 1.0, (offsets[-1], N_FEATURES))
    witness = rng.random(offsets[-1]) < np.repeat(rng.uniform(0.0, 0.8, n_bags), sizes)
    X[witness, 0] += 3.0
    share = np.add.reduceat(witness.astype(np.float64), offsets[:-1]) / sizes
    if task == "survival":
        event_time = rng.exponential(np.exp(-5.0 * share))
        follow_up = rng.uniform(0.1, 1.0, n_bags)
        y = survival_labels(np.minimum(event_time, follow_up), event_time <= follow_up)
    else:
        y = regression_labels(2.0 * share + rng.normal(0.0, 0.2, n_bags))
    return Bags(X, offsets, y, instance_y=witness.astype(np.int64))


def estimator_of(spec_or_estimator, task: str):
    """An unfitted estimator for ``task``: the spec's (its defaults) or a clone of the estimator given."""
    if isinstance(spec_or_estimator, LearnerSpec):
        return spec_or_estimator.build(task=task)
    return clone(spec_or_estimator)


def outcome_score(estimator, test: Bags, task: str) -> float:
    """Harrell's concordance of the predicted risks (survival) or the R^2 of the predicted values (regression)."""
    predicted = estimator.predict(test)
    if task == "survival":
        from sksurv.metrics import concordance_index_censored

        return float(concordance_index_censored(test.y["event"], test.y["time"], predicted)[0])
    from sklearn.metrics import r2_score

    return float(r2_score(test.y["target"], predicted))


def check_outcome_learned(spec, task):
    """Fit returns self; a prediction per bag, finite; survival curves of the documented shape that start at 1
    and never rise; the outcome learned on easy bags (a concordance or an R^2 well above chance)."""
    train, test = outcome_bags(100, task, seed=SEED), outcome_bags(60, task, seed=SEED + 1)
    est = estimator_of(spec, task)
    assert est.fit(train, train.y) is est, "fit must return self"
    predicted = est.predict(test)
    assert predicted.shape == (test.n_bags,) and np.isfinite(predicted).all()
    if task == "survival":
        times = np.quantile(train.y["time"], [0.0, 0.2, 0.5, 0.8])
        curves = est.predict_survival(test, times)
        assert curves.shape == (test.n_bags, len(times)), f"predict_survival gave shape {curves.shape}"
        assert (np.diff(curves, axis=1) <= 1e-9).all() and (curves >= 0).all() and (curves <= 1).all()
    score = outcome_score(est, test, task)
    least, name = (MIN_CONCORDANCE, "concordance") if task == "survival" else (MIN_R2, "R^2")
    assert score >= least, f"held-out {name} {score:.2f} on easy witness bags (expected >= {least})"


def check_outcome_input(spec, task):
    """``__init__`` stores parameters only (clone round-trips); a list of 2-D arrays and ``Bags`` give the same
    model, and two fits with the same ``random_state`` the same predictions."""
    train, test = outcome_bags(24, task, seed=SEED), outcome_bags(12, task, seed=SEED + 1)
    est = estimator_of(spec, task)
    params = est.get_params(deep=False)
    assert clone(est).get_params(deep=False).keys() == params.keys(), "clone must keep every parameter"
    fitted = [a for a in vars(est) if a.endswith("_") and not a.startswith("_")]
    assert not fitted, f"fitted attributes set before fit: {fitted}"
    from_bags = clone(est).fit(train, train.y).predict(test)
    from_list = clone(est).fit(train.to_list(), train.y).predict(test.to_list())
    np.testing.assert_allclose(from_list, from_bags, err_msg="list input and Bags input differ")
    if "random_state" in params:
        seeded = clone(est).set_params(random_state=SEED)
        first, second = (clone(seeded).fit(train, train.y).predict(test) for _ in range(2))
        np.testing.assert_array_equal(first, second, err_msg="same random_state, different predictions")


def check_outcome_labels(spec, task):
    """Labels of another task and bad labels are refused with a ValueError, a prediction before fit too."""
    from sklearn.exceptions import NotFittedError

    bags = outcome_bags(12, task, seed=SEED)
    bad = [(np.arange(12) % 2 if task == "survival" else np.array(["a", "b"] * 6), "labels of another task")]
    if task == "survival":
        censored = bags.y.copy()
        censored["event"] = False
        bad.append((censored, "labels without an event"))
    for labels, what in bad:
        try:
            estimator_of(spec, task).fit(bags, labels)
        except ValueError:
            continue
        raise AssertionError(f"fit accepted {what}; expected a ValueError")
    try:
        estimator_of(spec, task).predict(bags)
    except NotFittedError:
        return
    raise AssertionError("predict before fit did not raise NotFittedError")


OUTCOME_CHECKS = (check_outcome_learned, check_outcome_input, check_outcome_labels)
