"""automil report --published: each learner beside its paper's figure, from stored study records."""

from automil import Published
from automil.track.reading.against_published import compare, render_comparisons
from automil.track.reading.stored_studies import StoredStudy

PAPER = Published("Someone et al., ICML 2002", {"musk1": 88.0, "fox": 60.0})


def study(learner, dataset, trials=20, **metrics):
    return StoredStudy(learner=learner, dataset=dataset, study=f"{dataset}/{learner}", status="ok",
                       run_id=f"{learner}-{dataset}", end_time=1, metrics={"trials": trials, **metrics})


STUDIES = [
    study("nsk", "musk1", accuracy=0.80, accuracy_std=0.05, balanced_accuracy=0.79, balanced_accuracy_std=0.06,
          accuracy_repeated_cv=0.841, accuracy_repeated_cv_std=0.01, repeats=10),
    study("nsk", "fox", accuracy=0.61, accuracy_std=0.08, accuracy_repeated_cv=0.62, repeats=1),
    study("sil", "musk1", trials=3, accuracy=0.75, accuracy_repeated_cv=0.77, repeats=10),
]


def test_the_difference_is_the_paper_protocol_figure_minus_the_published_one():
    rows = {row.learner: row for row in compare(STUDIES, {"nsk": PAPER}, "musk1")}
    assert rows["nsk"].published == 88.0 and rows["nsk"].paper == PAPER.paper
    assert abs(rows["nsk"].difference - (84.1 - 88.0)) < 1e-9
    assert rows["nsk"].below  # 3.9 points below: more than 3
    assert rows["sil"].published is None and rows["sil"].difference is None and not rows["sil"].below


def test_a_learner_within_three_points_is_not_marked():
    (row,) = [r for r in compare(STUDIES, {"nsk": PAPER}, "fox") if r.learner == "nsk"]
    assert abs(row.difference - 2.0) < 1e-9 and not row.below


def test_the_table_shows_trials_figures_repeats_and_the_cited_paper():
    text = render_comparisons(STUDIES, {"nsk": PAPER}, ["musk1", "fox"])
    lines = text.splitlines()
    assert lines[0] == "### musk1"
    nsk = [line for line in lines if line.startswith("| nsk |")]
    assert nsk[0] == "| nsk | 20 | 80.0 ± 5.0 | 79.0 ± 6.0 | 84.1 ± 1.0 | 10 | 88.0 [1] | -3.9 ▼ |"
    assert nsk[1] == "| nsk | 20 | 61.0 ± 8.0 | - | 62.0 | 1 | 60.0 [1] | +2.0 |"  # one repeat: no sd
    assert "| sil | 3 | 75.0 | - | 77.0 | 10 |  |  |" in lines
    assert lines[-1] == "[1] Someone et al., ICML 2002"


def test_datasets_without_studies_are_left_out():
    assert "### tiger" not in render_comparisons(STUDIES, {"nsk": PAPER}, ["tiger", "fox"])
