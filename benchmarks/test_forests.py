"""The forests' speed on fox, 100 trees (docs/published.md, section 4): MIRF within 3x of scikit-learn's
RandomForestClassifier on the same instances, and ``n_jobs=2`` at least 1.6x faster than ``n_jobs=1``.
``forest_speed.py`` adds MIRF's fit time against the number of bags."""

import numpy as np
import pytest
from conftest import kept
from forest_speed import N_TREES
from sklearn.ensemble import RandomForestClassifier

import automil
from automil_forests.forest import resolve_max_features
from automil_forests.mirf import MIRFClassifier


@pytest.fixture(scope="module")
def fox():
    return automil.load_bags("fox")


def test_random_forest_on_the_instances(fox, timed):
    m = resolve_max_features("sqrt", fox.n_features)
    y = np.repeat(fox.y, fox.sizes)
    timed("random forest", lambda: RandomForestClassifier(N_TREES, max_features=m, random_state=0, n_jobs=1)
          .fit(fox.X, y))


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_mirf(fox, n_jobs, timed):
    timed(f"mirf n_jobs={n_jobs}", lambda: MIRFClassifier(N_TREES, random_state=0, n_jobs=n_jobs).fit(fox))


def test_mirf_is_within_3x_of_the_random_forest(best):
    mirf, forest = kept(best, "mirf n_jobs=1", "random forest")
    assert mirf <= 3 * forest, f"MIRF {mirf:.2f} s, random forest {forest:.2f} s"


def test_two_threads_are_at_least_1_6x_faster(best):
    one, two = kept(best, "mirf n_jobs=1", "mirf n_jobs=2")
    assert one >= 1.6 * two, f"n_jobs=1 {one:.2f} s, n_jobs=2 {two:.2f} s"
