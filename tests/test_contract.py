"""The contract suite over every registered learner (built-in plugins; third-party ones when loaded)."""

import dataclasses

import numpy as np
import optuna
import pytest
from contract_settings import for_contract

import automil
from automil import plugins
from automil.checks import (
    check_first_trial_is_a_point_of_the_search_space,
    check_search_space_extremes,
    learner_checks,
)
from automil.learner import SEED

REGISTRY = plugins.registry("learners")
CASES = [pytest.param(spec.name, check, id=f"{spec.name}-{check.__name__}")
         for spec in REGISTRY.learners.values() for check in learner_checks(for_contract(spec))]
# a built-in plugin that cannot load here (the deep learners without PyTorch) is a skip that says why
CASES += [pytest.param(plugin, None, id=f"{plugin}-not-loaded", marks=pytest.mark.skip(reason=f"{plugin}: {why}"))
          for plugin, why in REGISTRY.failures.items() if plugin in plugins.BUILTIN_PLUGINS]


@pytest.mark.parametrize(("learner", "check"), CASES)
def test_learner_honours_contract(learner, check):
    check()


def test_build_seeds_every_learner_that_takes_a_random_state_unless_told_otherwise():
    takes_seed = [spec for spec in automil.learners().values() if "random_state" in spec.build().get_params()]
    assert {"mirf", "bag-stats", "pdmisvm", "mi-svm"} <= {spec.name for spec in takes_seed}
    for spec in takes_seed:
        assert spec.build().get_params()["random_state"] == SEED, spec.name
        assert spec.build(random_state=7).get_params()["random_state"] == 7, spec.name
        from_defaults = dataclasses.replace(spec, defaults={**spec.defaults, "random_state": 3})
        assert from_defaults.build().get_params()["random_state"] == 3, spec.name
    assert "random_state" not in automil.get_learner("nsk").build().get_params()  # takes none, is given none


def test_two_untuned_builds_of_a_seeded_learner_fit_the_same_model():
    rng = np.random.default_rng(0)
    bags = [rng.normal(size=(int(rng.integers(2, 6)), 4)) + label for label in (0, 1) * 10]
    y = [0, 1] * 10
    spec = automil.get_learner("mirf")
    first, second = (spec.build(n_estimators=5).fit(bags, y).predict_proba(bags) for _ in range(2))
    np.testing.assert_array_equal(first, second)


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
    def refusing_space(trial):
        raise optuna.TrialPruned("no setting fits")

    spec = dataclasses.replace(automil.get_learner("mirf"), search_space=refusing_space)
    with pytest.raises(AssertionError, match="it prunes it"):
        check_first_trial_is_a_point_of_the_search_space(spec)


def test_a_search_space_with_an_overflowing_end_fails_the_contract():
    # pdMISVM's space before issue 14: maxiter up to 3000 whatever mu0 and rho, so at the high ends
    # mu0 * rho^maxiter = 1e-2 * 1.5^3000 overflows in a fit that runs to maxiter; it warns and the check
    # reports the point.
    def unbounded_space(trial):
        return {"C": 1.0, "mu0": trial.suggest_float("mu0", 1e-10, 1e-2, log=True),
                "rho": trial.suggest_float("rho", 1.01, 1.5), "maxiter": trial.suggest_int("maxiter", 200, 3000),
                "tol": 1e-300}  # never reached: every fit runs to maxiter

    spec = dataclasses.replace(automil.get_learner("pdmisvm"), search_space=unbounded_space)
    with pytest.raises(AssertionError, match="'maxiter': 3000.*RuntimeWarning.*overflow"):
        check_search_space_extremes(spec, n_random=0)
