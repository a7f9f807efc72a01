"""The Kaplan-Meier curves of held-out patients split at the training folds' median risk: the groups, the curves
and the log-rank p-value are scikit-survival's on the same split, and the figure is a real PNG."""

import numpy as np
import pytest
from sksurv.compare import compare_survival
from sksurv.nonparametric import kaplan_meier_estimator
from sksurv.util import Surv

from automil.evaluation.survival_figures import kaplan_meier_split
from automil.track.writing.figures import kaplan_meier_figure


def patients(n=90, seed=0):
    rng = np.random.default_rng(seed)
    risk = rng.standard_normal(n)
    death = rng.exponential(np.exp(-risk))
    censoring = rng.exponential(1.5, n)
    return np.minimum(death, censoring), death <= censoring, risk


def test_the_p_value_is_compare_survivals_on_the_same_split_and_the_curves_kaplan_meiers():
    time, event, risk = patients()
    cut = np.median(risk[:60])  # the training folds' median risk, applied to held-out patients
    split = kaplan_meier_split(time, event, risk, cut)
    high = risk > cut
    chi2, p_value = compare_survival(Surv.from_arrays(event, time), high.astype(int))[:2]
    assert split.p_value == p_value and split.chi2 == chi2 and split.p_value < 0.05
    assert (split.low.patients, split.high.patients) == ((~high).sum(), high.sum())
    steps, survival = kaplan_meier_estimator(event[high], time[high])
    assert np.array_equal(split.high.time, steps) and np.array_equal(split.high.survival, survival)
    assert split.high.events == event[high].sum()
    assert np.array_equal(split.low.censored, np.sort(time[~high & ~event]))
    assert split.high.at([0.0])[0] == 1.0 and split.high.at([time.max()])[0] == survival[-1]


def test_a_cut_per_patient_splits_each_patient_at_its_own_folds_median():
    time, event, risk = patients(seed=1)
    cut = np.where(np.arange(len(risk)) % 2 == 0, -0.5, 0.5)  # two outer folds, each its own cut
    split = kaplan_meier_split(time, event, risk, cut)
    assert split.high.patients == (risk > cut).sum()
    expected = compare_survival(Surv.from_arrays(event, time), (risk > cut).astype(int))[1]
    assert split.p_value == expected


def test_nothing_to_test_when_one_group_is_empty():
    time, event, risk = patients(seed=2)
    split = kaplan_meier_split(time, event, risk, risk.max())
    assert split.p_value is None and split.high.patients == 0 and split.low.patients == len(risk)


@pytest.mark.parametrize("change, message", [
    (lambda t, e, r: (np.r_[t[:3], -1.0, t[4:]], e, r), "patient 3: time is negative or missing"),
    (lambda t, e, r: (t, np.r_[e[:5], 2, e[6:]], r), "patient 5: event must be 0 or 1"),
    (lambda t, e, r: (t, e, r[:-1]), "one entry a patient"),
])
def test_bad_input_is_named(change, message):
    with pytest.raises(ValueError, match=message):
        kaplan_meier_split(*change(*patients()), 0.0)


def test_the_figure_is_a_png_with_both_curves_and_the_p_value_in_its_title(tmp_path):
    time, event, risk = patients()
    cut = np.median(risk)
    figure = kaplan_meier_figure(time, event, risk, cut, "Held-out patients")
    path = tmp_path / "kaplan_meier.png"
    figure.savefig(path, dpi=60)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (ax,) = figure.axes
    p_value = kaplan_meier_split(time, event, risk, cut).p_value
    assert ax.get_title() == f"Held-out patients\nlog-rank p = {p_value:.3g}"
    assert [text.get_text().split(":")[0] for text in ax.get_legend().get_texts()] == ["low risk", "high risk"]
