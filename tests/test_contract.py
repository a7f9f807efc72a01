"""The contract suite over every registered learner (built-in plugins; third-party ones when loaded)."""

import pytest

import automil
from automil.checks import learner_checks

CASES = [(spec.name, check) for spec in automil.learners().values() for check in learner_checks(spec)]


@pytest.mark.parametrize(("learner", "check"), CASES, ids=[f"{n}-{c.__name__}" for n, c in CASES])
def test_learner_honours_contract(learner, check):
    check()
