"""The generated survival and regression cohorts (automil_datasets.outcomes) and their experiment script: the
oracle is what scikit-survival or scikit-learn give the truth on the labels as written, the censoring share is
the one asked for, a patient's rows agree, and equal arguments give equal files."""

import csv
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import r2_score
from sksurv.metrics import concordance_index_censored

from automil.evaluation.folds_file import RunFolds
from automil_datasets.outcomes import write_regression_cohort, write_survival_cohort

REPO = Path(__file__).resolve().parents[1]
SMALL = {"n_patients": 150, "n_features": 8, "patches": (20, 40)}


def load_script():
    spec = importlib.util.spec_from_file_location("endpoint_cohorts", REPO / "experiments" / "endpoint_cohorts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def per_patient(rows, *columns):
    """Each patient's outcome, checking that every row of the patient gives the same one."""
    outcome = {}
    for row in rows:
        value = tuple(row[c] for c in columns)
        assert outcome.setdefault(row["case_id"], value) == value, row
    return outcome


@pytest.fixture(scope="module")
def survival(tmp_path_factory):
    return write_survival_cohort(tmp_path_factory.mktemp("survival") / "cohort", seed=3, **SMALL)


def test_survival_labels_are_one_outcome_a_patient_of_1_to_3_trident_slides(survival):
    rows = table(survival.labels)
    assert list(rows[0]) == ["case_id", "slide_id", "time", "event"]
    outcome = per_patient(rows, "time", "event")
    assert list(outcome) == list(survival.patients) and len(outcome) == SMALL["n_patients"]
    counts = np.unique([row["case_id"] for row in rows], return_counts=True)[1]
    assert counts.min() >= 1 and counts.max() <= 3 and len(rows) == len(survival.slides)
    folder = survival.features / "20x_256px_0px_overlap" / "features_uni_v1"
    assert sorted(p.stem for p in folder.glob("*.h5")) == sorted(survival.slides)
    assert all(float(t) > 0 and e in ("0", "1") for t, e in outcome.values())


def test_survival_oracle_is_harrells_c_of_the_true_risk_well_above_chance_and_censoring_as_asked(survival):
    outcome = per_patient(table(survival.labels), "time", "event")
    time = np.array([float(outcome[p][0]) for p in survival.patients])
    event = np.array([outcome[p][1] == "1" for p in survival.patients])
    assert survival.oracle == concordance_index_censored(event, time, survival.truth)[0]
    assert survival.oracle > 0.6
    assert 0.3 <= 1 - event.mean() <= 0.5 and survival.censored == pytest.approx(1 - event.mean())
    # the risk grows with the witness share, as the proportional-hazards model says
    assert np.array_equal(np.argsort(survival.truth, kind="stable"), np.argsort(survival.share, kind="stable"))


def test_the_censoring_share_follows_the_argument(tmp_path):
    for censored in (0.3, 0.5):
        cohort = write_survival_cohort(tmp_path / f"c{censored}", censored=censored, shape=1.5, **SMALL)
        assert abs(cohort.censored - censored) <= 1 / SMALL["n_patients"]


def test_equal_arguments_give_equal_files_and_another_seed_other_ones(tmp_path, survival):
    again = write_survival_cohort(tmp_path / "again", seed=3, **SMALL)
    other = write_survival_cohort(tmp_path / "other", seed=4, **SMALL)

    def files(root):
        return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    assert files(again.features) == files(survival.features)
    assert files(other.features) != files(survival.features)


def test_regression_target_is_the_noisy_share_and_its_oracle_r2_that_of_the_noiseless_share(tmp_path):
    cohort = write_regression_cohort(tmp_path / "regression", seed=1, noise=4.0, **SMALL)
    rows = table(cohort.labels)
    assert list(rows[0]) == ["case_id", "slide_id", "target"]
    outcome = per_patient(rows, "target")
    target = np.array([float(outcome[p][0]) for p in cohort.patients])
    assert np.array_equal(cohort.truth, 100 * cohort.share)
    assert cohort.oracle == r2_score(target, cohort.truth) and cohort.oracle > 0.5
    assert 2.0 < np.std(target - cohort.truth) < 8.0  # the noise asked for, not none


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(ValueError, match="censored must be in"):
        write_survival_cohort(tmp_path / "a", censored=1.2, **SMALL)
    with pytest.raises(ValueError, match="max_share must be in"):
        write_regression_cohort(tmp_path / "b", max_share=0, **SMALL)


def test_the_script_writes_the_facts_beside_the_folder_and_the_oracle_on_a_runs_folds(tmp_path, capsys):
    script = load_script()
    out = tmp_path / "reg"
    script.main(["regression", "--out", str(out), "--patients", "60", "--features", "8", "--seed", "2"])
    facts = json.loads((tmp_path / "reg.json").read_text())
    assert facts["task"] == "regression" and facts["n_patients"] == 60 and facts["labels"] == "reg/labels.csv"
    rows = table(out / "labels.csv")
    target = {row["case_id"]: float(row["target"]) for row in rows}
    patients = sorted(target)
    assert facts["oracle_r2"] == pytest.approx(
        r2_score([target[p] for p in patients], [facts["truth"][p] for p in patients]))
    # a run that pooled each patient into one bag (--bag-by case_id): its folds name the patients
    assignment = np.arange(len(patients)) % 3
    (tmp_path / "folds.json").write_text(RunFolds("reg", tuple(patients), assignment, (assignment,)).to_json())
    figures = script.on_run(out, tmp_path / "folds.json", [0, 1, 2])
    expected = np.mean([r2_score([target[p] for p in np.array(patients)[assignment == f]],
                                 [facts["truth"][p] for p in np.array(patients)[assignment == f]]) for f in range(3)])
    assert figures == {"patients_on_two_sides": 0, "oracle_r2": pytest.approx(expected)}
    # a run of one bag a slide whose folds split a patient is caught
    slides = [row["slide_id"] for row in rows]
    split = np.arange(len(slides)) % 3
    (tmp_path / "slides.json").write_text(RunFolds("reg", tuple(slides), split, (split,)).to_json())
    assert script.on_run(out, tmp_path / "slides.json", [0])["patients_on_two_sides"] > 0


def test_the_script_takes_the_survival_oracle_and_the_kaplan_meier_baseline_on_a_runs_outer_folds(tmp_path):
    from sksurv.compare import compare_survival
    from sksurv.metrics import integrated_brier_score
    from sksurv.nonparametric import SurvivalFunctionEstimator

    from automil.endpoints import evaluation_times, survival_labels

    script = load_script()
    out = tmp_path / "surv"
    script.main(["survival", "--out", str(out), "--patients", "90", "--features", "8", "--seed", "5"])
    facts = json.loads((tmp_path / "surv.json").read_text())
    assert 0.3 <= facts["censored_share"] <= 0.5 and facts["oracle_concordance"] > 0.55
    outcome = per_patient(table(out / "labels.csv"), "time", "event")
    patients = np.array(sorted(outcome))
    y = survival_labels([float(outcome[p][0]) for p in patients], [int(outcome[p][1]) for p in patients])
    risk = np.array([facts["truth"][p] for p in patients])
    assignment = np.arange(len(patients)) % 3
    (tmp_path / "folds.json").write_text(RunFolds("surv", tuple(patients), assignment, (assignment,)).to_json())
    figures = script.on_run(out, tmp_path / "folds.json", [0, 1, 2])
    concordance, brier = [], []
    for fold in range(3):
        test, train = assignment == fold, assignment != fold
        concordance.append(concordance_index_censored(y["event"][test], y["time"][test], risk[test])[0])
        times = evaluation_times(y[train], y[test])
        baseline = SurvivalFunctionEstimator().fit(y[train]).predict_proba(times)
        kept = y[test]["time"] <= y[train]["time"].max()  # where the training folds estimate censoring
        brier.append(integrated_brier_score(y[train], y[test][kept], np.tile(baseline, (kept.sum(), 1)), times))
    assert figures["patients_on_two_sides"] == 0
    assert figures["oracle_concordance"] == pytest.approx(np.mean(concordance))
    assert figures["kaplan_meier_integrated_brier"] == pytest.approx(np.mean(brier)) and np.mean(brier) < 0.25
    # the true survival curves beat the Kaplan-Meier curve that ignores the slides
    assert figures["oracle_integrated_brier"] < figures["kaplan_meier_integrated_brier"]
    cut = np.array([np.median(risk[assignment != fold]) for fold in assignment])
    high = (risk > cut).astype(int)
    assert figures["oracle_logrank_p"] == compare_survival(y, high)[1] < 0.05
