"""The results table: what it shows for the studies a tracking store holds (records as Tracker.studies
returns them; the round trip through a real store is in test_tracking.py)."""

import csv
import io

import pytest

from automil.track.reading.results_table import build_table, render
from automil.track.reading.stored_studies import StoredStudy


def study(learner, dataset, acc=None, bacc=None, status="ok", end_time=1, protocol="nested", sd=0.02, **more):
    """A study as read back from a store; ``more``: further metrics of its parent run."""
    metrics = {}
    if acc is not None:
        metrics.update(accuracy=acc, accuracy_std=sd)
    if bacc is not None:
        metrics.update(balanced_accuracy=bacc, balanced_accuracy_std=sd)
    return StoredStudy(learner=learner, dataset=dataset, study=f"{dataset}/{learner}", status=status,
                       run_id=f"{learner}-{dataset}-{end_time}", end_time=end_time, metrics={**metrics, **more},
                       tags={"automil.protocol": protocol})


STUDIES = [
    study("mi-SVM", "fox", 0.60, 0.59), study("pdMISVM", "fox", 0.64, 0.62), study("NSK", "fox", 0.64, 0.61),
    study("mi-SVM", "musk1", 0.87, 0.86), study("pdMISVM", "musk1", 0.85, 0.86),
    study("NSK", "musk1", status="T/O"),
]


def markdown_rows(text):
    rows = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| learner"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows


def test_learners_are_rows_and_datasets_columns_with_acc_and_bacc_in_percent():
    text = render(build_table(STUDIES), "markdown")
    assert text.splitlines()[0] == "| learner | fox ACC | fox BACC | musk1 ACC | musk1 BACC |"
    rows = markdown_rows(text)
    assert sorted(rows) == ["NSK", "mi-SVM", "pdMISVM"]
    assert rows["mi-SVM"][:2] == ["60.0 ± 2.0", "59.0 ± 2.0"]


def test_best_of_each_column_is_bold_and_a_tie_bolds_both():
    rows = markdown_rows(render(build_table(STUDIES), "markdown"))
    assert rows["pdMISVM"][0] == "**64.0 ± 2.0**" and rows["NSK"][0] == "**64.0 ± 2.0**"  # tie on fox ACC
    assert rows["pdMISVM"][1] == "**62.0 ± 2.0**" and not rows["NSK"][1].startswith("**")
    assert rows["mi-SVM"][2] == "**87.0 ± 2.0**"
    assert rows["mi-SVM"][3] == "**86.0 ± 2.0**" and rows["pdMISVM"][3] == "**86.0 ± 2.0**"


def test_a_learner_whose_every_trial_timed_out_shows_TO_and_is_never_best():
    rows = markdown_rows(render(build_table(STUDIES), "markdown"))
    assert rows["NSK"][2:] == ["T/O", "T/O"]


def test_the_latest_study_of_a_pair_is_shown():
    older, newer = study("SIL", "fox", 0.5, 0.5, end_time=10), study("SIL", "fox", 0.7, 0.7, end_time=20)
    for studies in ([older, newer], [newer, older]):
        rows = markdown_rows(render(build_table(studies), "markdown"))
        assert rows["SIL"][0].strip("*") == "70.0 ± 2.0"


def test_dataset_option_chooses_and_orders_the_columns():
    table = build_table(STUDIES, datasets=["musk1", "elephant"])
    text = render(table, "markdown")
    assert text.splitlines()[0] == "| learner | musk1 ACC | musk1 BACC | elephant ACC | elephant BACC |"
    assert markdown_rows(text)["mi-SVM"][2:] == ["", ""]


def test_figures_of_the_tuned_protocol_are_marked_optimistic():
    text = render(build_table([study("SIL", "fox", 0.7, 0.7, protocol="tuned"), study("NSK", "fox", 0.6, 0.6)]),
                  "markdown")
    rows = markdown_rows(text)
    assert rows["SIL"][0] == "**70.0 ± 2.0†**" and rows["NSK"][0] == "60.0 ± 2.0"
    assert "† tuned and reported on the same folds (optimistic)" in text


def test_csv_has_unrounded_percentages_and_status_texts():
    rows = list(csv.DictReader(io.StringIO(render(build_table(STUDIES), "csv"))))
    by_learner = {row["learner"]: row for row in rows}
    assert float(by_learner["pdMISVM"]["fox BACC mean"]) == pytest.approx(62.0)
    assert float(by_learner["pdMISVM"]["fox BACC sd"]) == pytest.approx(2.0)
    assert by_learner["NSK"]["musk1 ACC mean"] == "T/O" and by_learner["NSK"]["musk1 ACC sd"] == ""


def test_html_bolds_the_best_cells_and_escapes_names():
    text = render(build_table([study("a<b", "fox", 0.7, 0.7), study("c", "fox", 0.6, 0.65)]), "html")
    assert "<th>a&lt;b</th><td><b>70.0 ± 2.0</b></td><td><b>70.0 ± 2.0</b></td>" in text
    assert "<th>c</th><td>60.0 ± 2.0</td><td>65.0 ± 2.0</td>" in text


def test_unknown_format_is_refused_by_name():
    with pytest.raises(ValueError, match="'latex'"):
        render(build_table(STUDIES), "latex")


def test_a_study_tuned_for_accuracy_against_cost_brings_the_fit_seconds_column():
    fast = study("SIL", "fox", 0.6, 0.6, fit_seconds=0.0123, pareto_front_size=3.0)
    slow = study("NSK", "fox", 0.7, 0.7, fit_seconds=140.4)
    text = render(build_table([fast, slow]), "markdown")
    assert text.splitlines()[0] == "| learner | fox ACC | fox BACC | fox fit s |"
    rows = markdown_rows(text)
    assert rows["SIL"][2] == "0.012" and rows["NSK"][2] == "140"  # never bold: a cost, not a score
    assert "fit s: mean seconds of one fit" in text
    [header, *rows] = list(csv.reader(io.StringIO(render(build_table([fast, slow]), "csv"))))
    assert header[5:7] == ["fox fit s mean", "fox fit s sd"]
    assert {row[0]: row[5] for row in rows} == {"NSK": "140.4000", "SIL": "0.0123"}  # seconds, not %


def test_the_fit_seconds_column_is_asked_for_or_absent():
    plain = study("SIL", "fox", 0.6, 0.6, fit_seconds=2.5)
    assert "fit s" not in render(build_table([plain]), "markdown")
    assert markdown_rows(render(build_table([plain], cost=True), "markdown"))["SIL"][2] == "2.5"
    assert markdown_rows(render(build_table([plain, study("NSK", "fox", status="T/O")], cost=True),
                                "markdown"))["NSK"] == ["T/O", "T/O", ""]


def test_instance_figures_are_columns_only_when_a_study_logged_them_and_blank_for_the_others():
    assert "inst AUC" not in render(build_table(STUDIES), "markdown")
    sil = study("SIL", "digits", 0.8, 0.8, instance_auc=0.91, instance_auc_std=0.03, witness_precision=0.7)
    nsk = study("NSK", "digits", 0.85, 0.85)  # bag-level: no instance scores, no witness
    text = render(build_table([sil, nsk]), "markdown")
    assert text.splitlines()[0] == "| learner | digits ACC | digits BACC | digits inst AUC | digits wit prec |"
    rows = markdown_rows(text)
    assert rows["SIL"][2:] == ["**91.0 ± 3.0**", "**70.0**"] and rows["NSK"][2:] == ["", ""]
    assert "wit prec: share of positive bags whose witness is a positive instance" in text
