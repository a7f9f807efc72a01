"""The leaderboard as printed, on rows built by hand: one screen by default (the notes that are no error folded
into one summary line, every reason said once), every column and note under ``--verbose``."""

import re

import pytest

from automil.cli.common import SCREEN_WIDTH
from automil.cli.leaderboard_notes import note_kind
from automil.cli.main import build_parser
from automil.cli.tune import print_leaderboard
from automil.records import (
    PROCEDURE,
    Costs,
    Headline,
    InstanceFigures,
    LearnerResult,
    ModelRecord,
    RepeatedFigure,
    Status,
    TrialCounts,
    Tuning,
)

NO_MODEL = "no model: its full-data fit was not started: the time budget ran out"
# a reason as long as a slide folder's: it once widened the figure columns to some 400 characters
MEMORY = ("its fit on every bag is estimated at 45.3 GB (1,234,567 instances x 1024 features, pairs of a bag's "
          "instances in attention), above the 2.1 GB a fit may take under --memory (16 GB / 4 jobs); raise --memory "
          "or give fewer --jobs to run it; a learner above its share is not started, so its row holds no figure "
          "and no trial, and no other learner gives up any of its share for it")
FAILURE = "ValueError: Input contains NaN, infinity or a value too large for dtype('float64'). " * 4


def _row(learner, status, error=None, bacc=None, selected=False, **parts):
    return LearnerResult(dataset="digits-bags", learner=learner, protocol="nested", metric="balanced_accuracy", seed=0,
                         folds=5, status=status, error=error, model=ModelRecord(
                             selected=selected, registered="models:/automil-digits-bags/3" if selected else None),
                         **({} if bacc is None else _figures(bacc)), **parts)


def _figures(bacc):
    return dict(headline=Headline(kind="nested", accuracy=bacc, accuracy_std=0.02, balanced_accuracy=bacc,
                                  balanced_accuracy_std=0.031, roc_auc=bacc + 0.05, roc_auc_std=0.01, one_class=False),
                counts=TrialCounts(trials=12, timed_out=1), costs=Costs(fit_seconds=1.25, budget_seconds=40.0),
                tuning=Tuning(score=bacc + 0.01, best_params={"C": 1.5, "kernel": "rbf"}),
                repeated=RepeatedFigure(accuracy=bacc, balanced_accuracy=bacc, repeats=1),
                instance=InstanceFigures(0.8, 0.05, 0.7, None))


def _rows(noted=21):
    """The procedure, the chosen learner, ``noted`` learners without a model of their own, one skipped for
    memory, one too slow and one whose every trial failed."""
    return [_row(PROCEDURE, Status.OK, bacc=0.9, choices=["sil"] * 5),
            _row("sil", Status.OK, bacc=0.92, selected=True),
            *(_row(f"learner-{i}", Status.OK, NO_MODEL, bacc=0.8 - i / 100) for i in range(noted)),
            _row("abmil", Status.SKIPPED, MEMORY, counts=TrialCounts(trials=0)),
            _row("slowpoke", Status.TOO_SLOW, "too slow (estimated 900 s): its defaults would need about 900 s, more "
                                              "than the 120 s of its fair share", counts=TrialCounts(trials=1)),
            _row("mi-net", Status.FAILED, FAILURE, counts=TrialCounts(trials=3, failed=3))]


def _printed(capsys, rows, verbose=False) -> list[str]:
    assert print_leaderboard(rows, None, verbose=verbose) == 0
    return capsys.readouterr().out.splitlines()


def test_the_notes_that_are_no_error_are_folded_into_one_summary_line_counting_each_kind(capsys):
    out = "\n".join(_printed(capsys, _rows()))
    summary = ("21 learners have figures but no model of their own: the budget went to the chosen one; 1 learner is "
               "too slow: its defaults would not finish within its share of the budget; 1 learner is skipped: it "
               "cannot run on this data or within its memory share; `--verbose` lists them.")
    assert summary in out.replace("\n", " ")
    assert out.count("have figures but no model") == 1
    assert NO_MODEL not in out and MEMORY[:40] not in out and "estimated 900 s" not in out
    # the error is no note: it keeps its own line, cut short
    (error,) = [line for line in out.splitlines() if line.startswith("mi-net: failed: ValueError")]
    assert len(error) <= SCREEN_WIDTH and error.endswith("(`--verbose`: in full)")
    # what matters stays below them: the choice, the automil row's figure and how to apply the model
    chosen = out.index("Chosen: sil (nested BACC 92.0 +- 3.1; automil's own nested BACC 90.0 +- 3.1")
    assert out.index("`--verbose` lists them") < chosen < out.index(
        "Apply it: automil predict models:/automil-digits-bags/latest")


def test_one_note_of_a_kind_reads_in_the_singular(capsys):
    out = " ".join(_printed(capsys, _rows(noted=1)[:3]))
    assert "1 learner has figures but no model of its own: the budget went to the chosen one; `--verbose` lists" \
           in out


def test_the_default_table_fits_the_screen_with_a_short_status_where_a_row_has_no_figure(capsys):
    lines = _printed(capsys, _rows())
    assert max(len(line) for line in lines) <= SCREEN_WIDTH
    cells = {line.split()[0]: re.split(r"\s{2,}", line) for line in lines if line and not line.startswith("-")}
    assert cells["learner"] == ["learner", "BACC (nested)", "AUC (nested)", "fit s", "trials", "status"]
    assert cells["abmil"] == ["abmil", "skipped", "skipped", "0", "skipped"]
    assert cells["slowpoke"] == ["slowpoke", "too slow", "too slow", "1", "too slow"]
    assert cells["sil"] == ["sil (chosen)", "92.0 +- 3.1", "97.0 +- 1.0", "1.25", "12", "ok"]


def test_verbose_prints_every_column_and_every_note_in_full_each_reason_once(capsys):
    out = "\n".join(_printed(capsys, _rows(), verbose=True))
    header = out.splitlines()[0]
    for column in ("ACC (nested)", "repeated-CV BACC", "reps", "tuning BACC*", "budget s", "T/O", "inst AUC",
                   "wit prec", "status", "best parameters"):
        assert column in header
    assert "C=1.5 kernel=rbf" in out and "per outer split: sil sil sil sil sil" in out
    for i in range(21):
        assert f"learner-{i}: {NO_MODEL}" in out.splitlines()
    assert out.count(MEMORY) == 1 and f"abmil: skipped: {MEMORY}" in out.splitlines()
    assert out.count(FAILURE) == 1
    assert "lists them" not in out, "nothing folded: every note is listed"
    assert "Apply it: automil predict models:/automil-digits-bags/latest" in out


def test_a_final_fit_the_budget_cut_is_folded_and_one_that_raised_keeps_its_line(capsys):
    rows = [_row("sil", Status.OK, bacc=0.9, selected=True),
            _row("nsk", Status.PARTIAL, "nested fit: stopped: the time budget ran out", bacc=0.8),
            _row("midf", Status.PARTIAL, "nested fit: ValueError: a bag without instances", bacc=0.7)]
    assert note_kind(rows[1]) is not None and note_kind(rows[2]) is None
    out = _printed(capsys, rows)
    assert "1 learner has no full figure: the budget ran out during its final fits; `--verbose` lists them." in out
    assert "midf: partial: nested fit: ValueError: a bag without instances" in out
    assert not any(line.startswith("nsk:") for line in out)


@pytest.mark.parametrize("command", [["tune", "--dataset", "digits-bags"], ["run", "studies/quickstart.toml"]])
def test_tune_and_run_take_verbose(command):
    parser = build_parser()
    assert parser.parse_args([*command, "--verbose"]).verbose
    assert not parser.parse_args(command).verbose
