"""The learner contract as executable checks, for built-in and third-party learners alike.

scikit-learn's ``check_estimator`` assumes 2-D input, so this suite copies its mechanism for bags: one
function per property, each raising ``AssertionError`` that says what broke. Use it from your own tests::

    import pytest
    from automil.checks import learner_checks

    @pytest.mark.parametrize("check", learner_checks(MY_SPEC), ids=lambda c: c.__name__)
    def test_contract(check):
        check()

The MIL checks follow the "algorithmic unit tests" of Raff & Holt (NeurIPS 2023): a learner that claims
the standard MIL assumption must not learn from signals that only negative bags carry, and no learner may
depend on the order of a bag's instances. :mod:`automil.mil_assumption` holds the generated data, the
stricter presence test (:func:`check_presence_not_absence`) and the table of docs/algorithms.md.
"""

from __future__ import annotations

import functools

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from automil.bags import Bags
from automil.learner import LearnerSpec
from automil.mil_assumption import check_instance_order_does_not_matter, check_presence_not_absence
from automil.task_checks import OUTCOME_CHECKS, estimator_of, outcome_bags

__all__ = ["check_learner", "check_search_space_extremes", "learner_checks", "witness_bags",
           "check_instance_order_does_not_matter", "check_presence_not_absence"]

SEED = 0
N_FEATURES = 5


def witness_bags(n_bags_per_class: int, n_classes: int = 2, seed: int = SEED) -> Bags:
    """Bags of Gaussian noise where the class shows only in one planted instance (the witness).

    Binary: class 0 bags are pure noise; class 1 bags hold one instance shifted along feature 0, as the
    standard MIL assumption has it. With K > 2 classes, class k plants its witness along feature k.
    ``instance_y`` is 1 for the planted instances.
    """
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 7, n_bags_per_class * n_classes)
    labels = rng.permutation(np.repeat(np.arange(n_classes), n_bags_per_class))
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    X = rng.normal(0.0, 1.0, (offsets[-1], N_FEATURES))
    planted = offsets[:-1] + (rng.random(len(sizes)) * sizes).astype(np.int64)
    has_witness = labels > 0 if n_classes == 2 else np.ones(len(sizes), dtype=bool)
    direction = np.zeros_like(labels) if n_classes == 2 else labels
    X[planted[has_witness], direction[has_witness]] += 5.0
    instance_y = np.zeros(len(X), dtype=np.int64)
    instance_y[planted[has_witness]] = 1
    return Bags(X, offsets, labels, instance_y=instance_y)


def _estimator(spec_or_estimator):
    return estimator_of(spec_or_estimator, "classification")


def _tasks(spec) -> tuple[str, ...]:
    """The tasks a spec serves, or the task of an estimator's base class."""
    return spec.tasks if isinstance(spec, LearnerSpec) else (getattr(spec, "task", "classification"),)


def _data(task: str, size: int, seed: int) -> Bags:
    """Witness bags labelled for ``task``: classes, or an outcome that grows with the share of witnesses."""
    return witness_bags(size, seed=seed) if task == "classification" else outcome_bags(2 * size, task, seed=seed)


def _accuracy(estimator, bags: Bags, y) -> float:
    return float(np.mean(estimator.predict(bags) == np.asarray(y)))


# ---- the checks ------------------------------------------------------------------------------------
def check_clone_and_params(spec):
    """``__init__`` stores parameters only, so get_params, set_params and clone round-trip."""
    est = _estimator(spec)
    params = est.get_params(deep=False)
    for name, value in params.items():
        assert getattr(est, name) is value, f"__init__ must store parameter {name!r} unchanged"
    fitted = [a for a in vars(est) if a.endswith("_") and not a.startswith("_")]
    assert not fitted, f"fitted attributes set before fit: {fitted}"
    twin = clone(est)
    assert twin.get_params(deep=False).keys() == params.keys()
    assert est.set_params(**params) is est, "set_params must return self"


def check_binary(spec):
    """Binary bags with string labels: fit returns self, predictions use the original labels, the
    witness concept is learned, and scores, probabilities, witnesses and instance scores have the documented
    shapes."""
    train, test = witness_bags(20, seed=SEED), witness_bags(20, seed=SEED + 1)
    names = np.array(["negative", "positive"])
    est = _estimator(spec)
    assert est.fit(train, names[train.y]) is est, "fit must return self"
    assert list(est.classes_) == list(names)
    scores = est.decision_function(test)
    assert scores.shape == (test.n_bags, 2) and np.isfinite(scores).all()
    pred = est.predict(test)
    assert set(pred) <= set(names)
    assert (pred == est.classes_[np.argmax(scores, axis=1)]).all(), "predict must be the arg-max score"
    accuracy = _accuracy(est, test, names[test.y])
    assert accuracy >= 0.8, f"held-out accuracy {accuracy:.2f} on easy witness bags (expected >= 0.8)"
    if hasattr(est, "predict_proba"):
        proba = est.predict_proba(test)
        assert proba.shape == (test.n_bags, 2) and np.allclose(proba.sum(axis=1), 1.0)
        assert (proba >= 0).all()
    if hasattr(est, "_witness"):
        w = est.witness(test)
        assert w.shape == (test.n_bags,) and (w >= 0).all() and (w < test.sizes).all()
    if hasattr(est, "instance_scores"):
        instance = est.instance_scores(test)
        assert instance.shape == (test.n_instances, 2) and np.isfinite(instance).all()


def check_multiclass(spec):
    """Three classes with arbitrary integer labels: one score column per class, concept learned."""
    if isinstance(spec, LearnerSpec) and not spec.multiclass:
        return
    train, test = witness_bags(15, 3, seed=SEED), witness_bags(15, 3, seed=SEED + 1)
    labels = np.array([3, 5, 7])
    est = _estimator(spec).fit(train, labels[train.y])
    assert list(est.classes_) == [3, 5, 7]
    assert est.decision_function(test).shape == (test.n_bags, 3)
    accuracy = _accuracy(est, test, labels[test.y])
    assert accuracy >= 0.7, f"3-class held-out accuracy {accuracy:.2f} on witness bags (expected >= 0.7)"


def check_list_and_bags_input(spec):
    """A list of 2-D arrays and ``Bags`` give the same model."""
    train, test = witness_bags(12, seed=SEED), witness_bags(8, seed=SEED + 1)
    from_bags = _estimator(spec).fit(train, train.y).decision_function(test)
    from_list = _estimator(spec).fit(train.to_list(), train.y).decision_function(test.to_list())
    np.testing.assert_allclose(from_list, from_bags, err_msg="list input and Bags input differ")


def check_deterministic(spec):
    """Two fits with the same ``random_state`` give the same scores."""
    est = _estimator(spec)
    if "random_state" not in est.get_params():
        return
    train, test = witness_bags(12, seed=SEED), witness_bags(8, seed=SEED + 1)
    first = clone(est).set_params(random_state=7).fit(train, train.y).decision_function(test)
    second = clone(est).set_params(random_state=7).fit(train, train.y).decision_function(test)
    np.testing.assert_array_equal(first, second, err_msg="same random_state, different scores")


def check_refit_forgets(spec):
    """A second fit replaces the first: classes and width follow the new data."""
    if isinstance(spec, LearnerSpec) and not spec.multiclass:
        return
    first, second = witness_bags(10, seed=SEED), witness_bags(8, 3, seed=SEED)
    est = _estimator(spec).fit(first, first.y)
    est.fit(second, second.y)
    assert len(est.classes_) == 3


def check_bad_input(spec):
    """NaN, inf, empty bags, ragged bags, one class, wrong width and predicting unfitted all raise."""
    good = witness_bags(6, seed=SEED)
    bags, y = good.to_list(), good.y
    _raises(NotFittedError, lambda: _estimator(spec).predict(bags), "predict before fit")
    for what, broken in (("NaN", np.nan), ("inf", np.inf)):
        bad = [b.copy() for b in bags]
        bad[2][0, 1] = broken
        _raises(ValueError, lambda: _estimator(spec).fit(bad, y), f"a {what} feature", "bag 2")
    bad = list(bags)
    bad[3] = np.empty((0, N_FEATURES))
    _raises(ValueError, lambda: _estimator(spec).fit(bad, y), "an empty bag", "bag 3")
    bad = list(bags)
    bad[4] = bad[4][:, :-1]
    _raises(ValueError, lambda: _estimator(spec).fit(bad, y), "a bag of another width", "bag 4")
    _raises(ValueError, lambda: _estimator(spec).fit(bags, np.zeros(len(bags))), "one class only")
    _raises(ValueError, lambda: _estimator(spec).fit(bags, y[:-1]), "fewer labels than bags")
    fitted = _estimator(spec).fit(bags, y)
    _raises(ValueError, lambda: fitted.predict([b[:, :-1] for b in bags]), "predicting on another width")


def check_witness_copy_flips_negative_bag(spec):
    """Raff & Holt: a copy of a positive bag's witness makes a negative bag positive."""
    est, test = _mil_model(spec)
    negatives = [i for i in range(test.n_bags) if test.y[i] == 0]
    positives = [i for i in range(test.n_bags) if test.y[i] == 1]
    first = positives[0]
    rows = test.instance_rows([first])
    witness = test.X[rows[np.argmax(test.instance_y[rows])]]
    augmented = [np.vstack((test[i], witness)) for i in negatives]
    flipped = np.mean(est.predict(augmented) == 1)
    assert flipped >= 0.9, f"only {flipped:.0%} of negative bags turned positive with a witness added"


def check_negative_instances_keep_bag_negative(spec):
    """Raff & Holt: more negative instances never make a negative bag positive."""
    est, test = _mil_model(spec)
    negatives = [i for i in range(test.n_bags) if test.y[i] == 0]
    predicted_negative = [i for i in negatives if est.predict([test[i]])[0] == 0]
    donor = np.vstack([test[i] for i in negatives])
    augmented = [np.vstack((test[i], donor[:3])) for i in predicted_negative]
    stayed = np.mean(est.predict(augmented) == 0) if augmented else 1.0
    assert stayed >= 0.9, f"{1 - stayed:.0%} of negative bags turned positive from negative instances"


def check_negative_only_signal_is_not_learned(spec):
    """Raff & Holt: a pattern that only negative bags carry must not count as evidence against the
    positive class; under the MIL assumption a positive bag stays positive when it is added."""
    est, test = _mil_model(spec, poison=True)
    positives = [i for i in range(test.n_bags) if test.y[i] == 1 and est.predict([test[i]])[0] == 1]
    poison = np.zeros((1, N_FEATURES))
    poison[0, 1] = 5.0
    augmented = [np.vstack((test[i], poison)) for i in positives]
    kept = np.mean(est.predict(augmented) == 1) if augmented else 1.0
    assert kept >= 0.9, (f"{1 - kept:.0%} of positive bags turned negative when the negative-only "
                         "pattern was added: the learner uses absence/negative evidence")


_MIL_MODELS: dict = {}


def _mil_model(spec, poison=False):
    """The model the three MIL checks share, fitted once per learner (and per poisoning)."""
    key = (id(spec), poison)
    if key not in _MIL_MODELS:
        train, test = witness_bags(20, seed=SEED), witness_bags(20, seed=SEED + 1)
        if poison:  # every negative training bag also carries an instance shifted along feature 1
            rows = [np.vstack((b, np.eye(1, N_FEATURES, 1) * 5.0)) if label == 0 else b
                    for b, label in zip(train, train.y)]
            train = Bags.from_list(rows, train.y)
        _MIL_MODELS[key] = (spec, _estimator(spec).fit(train, train.y), test)
    return _MIL_MODELS[key][1:]


def _raises(error, call, what, *must_mention):
    try:
        call()
    except error as raised:
        message = str(raised)
        for word in must_mention:
            assert word in message, f"the error for {what} should name {word!r}, got: {message}"
        return
    except Exception as other:  # noqa: BLE001
        raise AssertionError(f"{what} raised {type(other).__name__} ({other}), expected "
                             f"{error.__name__}") from other
    raise AssertionError(f"{what} was accepted silently; expected {error.__name__}")


def check_first_trial_is_a_point_of_the_search_space(spec):
    """The driver runs ``spec.first_trial`` as the first trial of every new study: it must name exactly
    the parameters ``search_space`` suggests on that path, each inside its range, and build a learner
    that fits."""
    import warnings

    import optuna

    task = spec.tasks[0]
    bags = _data(task, 8, SEED)
    trial = _new_trial(None, bags.n_features, enqueue=spec.first_trial, task=task)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # Optuna only warns about a fixed value outside its range
        try:
            params = spec.search_space(trial)
        except (ValueError, UserWarning, optuna.TrialPruned) as error:
            raise AssertionError(f"first_trial {spec.first_trial} is not a point of the search space"
                                 f"{' (it prunes it)' if isinstance(error, optuna.TrialPruned) else ''}: "
                                 f"{error}") from error
    unknown, unset = set(spec.first_trial) - set(trial.params), set(trial.params) - set(spec.first_trial)
    assert not unknown, f"first_trial names parameters the search space never asks for: {sorted(unknown)}"
    assert not unset, f"first_trial leaves parameters to the sampler: {sorted(unset)}"
    spec.build(task=task, **params).fit(bags, bags.y)


def _new_trial(sampler, n_features, enqueue=None, task="classification"):
    """An ask-and-tell trial of a fresh in-memory study (``enqueue``: its fixed parameters), with the
    data attributes search spaces read (``task``: the task its learner is tuned for)."""
    import optuna

    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "A new study created" line in the user's log
    try:
        study = optuna.create_study(sampler=sampler)
    finally:
        optuna.logging.set_verbosity(verbosity)
    if enqueue is not None:
        study.enqueue_trial(enqueue)
    trial = study.ask()
    trial.set_user_attr("n_features", n_features)
    trial.set_user_attr("n_classes", 2)
    trial.set_user_attr("task", task)
    return trial


def _end_sampler(pattern: int):
    """A sampler that puts every parameter at an end of its range: pattern 0 all low ends, 1 all high
    ends, 2 and 3 alternate low/high in suggestion order; a categorical takes its choice number
    ``pattern`` (cyclically), so the four patterns visit every branch of a small define-by-run space."""
    import optuna

    class EndSampler(optuna.samplers.BaseSampler):
        def infer_relative_search_space(self, study, trial):
            return {}

        def sample_relative(self, study, trial, search_space):
            return {}

        def sample_independent(self, study, trial, param_name, distribution):
            if isinstance(distribution, optuna.distributions.CategoricalDistribution):
                return distribution.choices[pattern % len(distribution.choices)]
            high = pattern == 1 or (pattern >= 2 and (len(trial.params) + pattern) % 2 == 1)
            return distribution.high if high else distribution.low

    return EndSampler()


def check_search_space_extremes(spec, n_random: int = 2, task: str = "classification"):
    """Every point of the search space is valid: at the ends of its ranges (all low, all high, and
    alternating) and at ``n_random`` random points, the space suggests without pruning and the learner it
    builds fits a small problem of ``task`` without an error, a RuntimeWarning (overflow, a numerical
    breakdown) or a non-finite score. A tuner must never spend a trial on a point that cannot give a result."""
    import warnings

    import optuna

    if not isinstance(spec, LearnerSpec):
        return
    train, test = _data(task, 6, SEED), _data(task, 4, SEED + 1)
    samplers = [_end_sampler(pattern) for pattern in range(4)]
    samplers += [optuna.samplers.RandomSampler(seed=SEED + i) for i in range(n_random)]
    for sampler in samplers:
        trial = _new_trial(sampler, train.n_features, task=task)
        try:
            params = spec.search_space(trial)
        except optuna.TrialPruned as pruned:
            raise AssertionError(f"the search space prunes the point {trial.params}: {pruned}") from None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)
                model = spec.build(task=task, **params).fit(train, train.y)
                scores = model.decision_function(test) if task == "classification" else model.predict(test)
        except Exception as error:  # noqa: BLE001
            raise AssertionError(f"the point {trial.params} of the search space fails to fit: "
                                 f"{type(error).__name__}: {error}") from error
        assert np.isfinite(scores).all(), f"the point {trial.params} gives non-finite scores"


_GENERAL = (check_clone_and_params, check_binary, check_multiclass, check_list_and_bags_input,
            check_deterministic, check_refit_forgets, check_bad_input)
_MIL = (check_witness_copy_flips_negative_bag, check_negative_instances_keep_bag_negative,
        check_negative_only_signal_is_not_learned)


def learner_checks(spec) -> list:
    """The checks that apply to ``spec`` (a LearnerSpec, or an estimator instance), each a callable
    without arguments named after the property it proves: the classification checks where it serves
    classification, and for each other task it serves the outcome checks of :mod:`automil.task_checks` and
    the search space's extremes (their names end in the task)."""
    tasks, is_spec = _tasks(spec), isinstance(spec, LearnerSpec)
    checks = []
    if "classification" in tasks:
        checks += _GENERAL
        if not (is_spec and spec.ordered):
            checks.append(check_instance_order_does_not_matter)
        if is_spec:
            checks.append(check_search_space_extremes)
        if is_spec and spec.standard_mil:
            checks += _MIL
    if is_spec and spec.first_trial:
        checks.append(check_first_trial_is_a_point_of_the_search_space)
    bound = [functools.update_wrapper(functools.partial(check, spec), check) for check in checks]
    for task in (task for task in tasks if task != "classification"):
        for check in (*OUTCOME_CHECKS, *([check_search_space_extremes] if is_spec else [])):
            partial = functools.update_wrapper(functools.partial(check, spec, task=task), check)
            partial.__name__ = f"{check.__name__}_{task}"
            bound.append(partial)
    return bound


def check_learner(spec) -> None:
    """Run every applicable check; the first failure raises ``AssertionError`` naming the check."""
    for check in learner_checks(spec):
        try:
            check()
        except AssertionError as error:
            raise AssertionError(f"{check.__name__}: {error}") from error
