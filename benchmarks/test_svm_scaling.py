"""The SVM family's linear fits against the number of bags: log-log slope at most 1.5 (docs/published.md,
section 4), on the pdMISVM paper's synthetic bags. ``svm_scaling.py`` runs past the target range
and the dense-QP comparison (cvxopt) at 3,200 bags."""

import pytest
from conftest import kept, log_log_slope
from svm_scaling import LEARNERS

import automil
from automil_datasets.synthetic import make_synthetic_bags

SIZES = (100, 200, 400, 800, 1600, 3200)  # the range the target is stated over


@pytest.mark.parametrize("n_bags", SIZES)
@pytest.mark.parametrize("learner", LEARNERS)
def test_fit_time(learner, n_bags, timed):
    bags = make_synthetic_bags(n_bags, n_features=10, n_classes=2, seed=0)
    spec = automil.get_learner(learner)
    timed(f"{learner} N={n_bags}", lambda: spec.build(kernel="linear", C=1.0).fit(bags), rounds=5)


@pytest.mark.parametrize("learner", LEARNERS)
def test_fit_time_grows_with_a_slope_of_at_most_1_5(learner, best):
    seconds = kept(best, *(f"{learner} N={n}" for n in SIZES))
    assert log_log_slope(SIZES, seconds) <= 1.5, dict(zip(SIZES, seconds))
