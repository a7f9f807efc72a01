"""pdMISVM's fit time linear in the number of bags: log-log slope at most 1.1 (docs/published.md, section 4),
both variants, every fit exactly ``ITERATIONS`` iterations. ``pdmisvm_scaling.py`` runs 10^2 to 10^5 bags
and the features axis; ``pdmisvm_sival.py`` the iteration against its memory-traffic floor."""

import pytest
from conftest import kept, log_log_slope
from pdmisvm_scaling import ITERATIONS, VARIANTS

from automil_datasets.synthetic import make_synthetic_bags

SIZES = (100, 316, 1000, 3162)


@pytest.mark.parametrize("n_bags", SIZES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_fit_time(variant, n_bags, timed):
    bags = make_synthetic_bags(n_bags, n_features=10, n_classes=2, seed=0)
    timed(f"{variant} N={n_bags}", lambda: VARIANTS[variant](maxiter=ITERATIONS, tol=1e-300).fit(bags))


@pytest.mark.parametrize("variant", VARIANTS)
def test_fit_time_is_linear_in_the_bags(variant, best):
    seconds = kept(best, *(f"{variant} N={n}" for n in SIZES))
    assert log_log_slope(SIZES, seconds) <= 1.1, dict(zip(SIZES, seconds))
