"""The contract suite over every registered learner (built-in plugins; third-party ones when loaded)."""

import dataclasses

import pytest

import automil
from automil.checks import check_first_trial_is_a_point_of_the_search_space, learner_checks

CASES = [(spec.name, check) for spec in automil.learners().values() for check in learner_checks(spec)]


@pytest.mark.parametrize(("learner", "check"), CASES, ids=[f"{n}-{c.__name__}" for n, c in CASES])
def test_learner_honours_contract(learner, check):
    check()


@pytest.mark.parametrize(("first_trial", "problem"), [
    ({"n_estimators": 5000, "max_features_kind": "sqrt", "max_depth_limited": False}, "not a point"),
    ({"n_estimators": 100, "max_features_kind": "all", "max_depth_limited": False}, "not a point"),
    ({"n_estimators": 100, "max_features_kind": "sqrt", "max_depth_limited": False, "depth": 3}, "never asks"),
    ({"n_estimators": 100, "max_features_kind": "sqrt"}, "leaves parameters to the sampler"),
], ids=["out-of-range", "unknown-choice", "unknown-name", "incomplete"])
def test_a_first_trial_outside_the_search_space_fails_the_contract(first_trial, problem):
    spec = dataclasses.replace(automil.get_learner("mirf"), first_trial=first_trial)
    with pytest.raises(AssertionError, match=problem):
        check_first_trial_is_a_point_of_the_search_space(spec)


def test_a_first_trial_the_search_space_prunes_fails_the_contract():
    # mu0 * rho^maxiter = 1e-2 * 1.5^3000 would overflow: pdMISVM's space prunes such a point
    spec = automil.get_learner("pdmisvm")
    spec = dataclasses.replace(spec, first_trial={**spec.first_trial, "mu0": 1e-2, "rho": 1.5, "maxiter": 3000})
    with pytest.raises(AssertionError, match="it prunes it"):
        check_first_trial_is_a_point_of_the_search_space(spec)
