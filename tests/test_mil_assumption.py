"""The MIL-assumption tests (automil.mil_assumption, after Raff & Holt 2023) over every registered learner.

Every learner must give a bag the same score whatever the order of its instances (in the contract suite,
tests/test_contract.py), unless it declares ``ordered`` (a position encoding reads the order). A learner
that declares the standard assumption must pass the presence test, unless it is listed in PRESENCE_FAILURES
with the measured reason (docs/algorithms.md, section 18); a listed learner that starts passing fails the
test, so the table is kept true. The tests can fail: a bag-summary learner fails the presence test, and a
learner that scores a bag by its first instance fails the order test.
"""

import numpy as np
import pytest

import automil
from automil.learner import LearnerSpec
from automil.mil_assumption import (
    PASS_ACCURACY,
    check_instance_order_does_not_matter,
    check_presence_not_absence,
    presence_accuracy,
    threshold_accuracy,
)

# Learners that declare the standard assumption yet fail the presence test at their defaults, and why.
PRESENCE_FAILURES = {
    "sil": "labels every instance of a positive bag positive, so the poison's absence is learned as evidence",
}
DEEP = {"abmil", "mi-net", "MI-Net", "transmil", "dsmil"}
SPECS = automil.learners()


def _marks(name):
    return [pytest.mark.slow] if name in DEEP else []


STANDARD = [n for n, spec in SPECS.items() if spec.standard_mil]


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n)) for n in STANDARD])
def test_a_standard_mil_learner_learns_presence_not_absence(name):
    if name in PRESENCE_FAILURES:
        accuracy = presence_accuracy(SPECS[name].build)
        assert accuracy < PASS_ACCURACY, f"{name} passes the presence test now ({accuracy:.2f}): update the table"
    else:
        check_presence_not_absence(SPECS[name])


def test_the_presence_test_fails_a_learner_that_summarizes_bags():
    with pytest.raises(AssertionError, match="uses its absence"):
        check_presence_not_absence(SPECS["bag-stats"])


def test_a_max_instance_learner_cannot_pass_the_threshold_test_and_a_summary_learner_can():
    assert threshold_accuracy(SPECS["mi-svm"].build) < PASS_ACCURACY
    assert threshold_accuracy(SPECS["bag-stats"].build) >= PASS_ACCURACY


class _FirstInstance:
    """A learner that scores a bag by its first instance only (a sequence model, not a set model)."""

    def __init__(self):
        from sklearn.linear_model import LogisticRegression

        self.model = LogisticRegression()

    def fit(self, bags, y):
        self.model.fit(np.stack([bags[i][0] for i in range(bags.n_bags)]), y)
        return self

    def decision_function(self, bags):
        return self.model.decision_function(np.stack([bags[i][0] for i in range(bags.n_bags)]))

    def predict(self, bags):
        return self.model.predict(np.stack([bags[i][0] for i in range(bags.n_bags)]))


def test_the_order_test_fails_a_learner_that_reads_the_first_instance():
    spec = LearnerSpec("first-instance", _FirstInstance, lambda trial: {})
    with pytest.raises(AssertionError, match="reordering a bag.s instances changes its score"):
        check_instance_order_does_not_matter(spec)


def test_only_a_learner_that_declares_ordered_is_spared_the_order_check():
    from automil.checks import learner_checks

    def names(**declared):
        return {check.__name__ for check in learner_checks(LearnerSpec("first", _FirstInstance, dict, **declared))}

    assert "check_instance_order_does_not_matter" in names()
    assert "check_instance_order_does_not_matter" not in names(ordered=True)
    assert {name for name in names() if name != "check_instance_order_does_not_matter"} == names(ordered=True)
