"""The rows' notes under the leaderboard: by default every note that is no error folded into one summary line
(a count per kind), each error on one short line; under ``--verbose`` every note in full, once.

Twenty rows each saying that the budget ran out before their model are all true, and together they bury the
lines that matter (what was chosen, how to apply it); a count says the same in one line.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from automil.cli.common import SCREEN_WIDTH, print_wrapped
from automil.records import PROCEDURE, LearnerResult, Status

__all__ = ["NoteKind", "NOTE_KINDS", "note_kind", "note_line", "print_notes"]


@dataclass(frozen=True)
class NoteKind:
    """A kind of note that is no error: the rows it covers (every note of a row of ``status``, else a note that
    starts with ``start``, a pattern) and what it says after "1 learner" (``one``) or "N learners" (``many``)."""

    one: str
    many: str
    status: Status | None = None
    start: str | None = None

    def covers(self, row: LearnerResult) -> bool:
        if self.status is not None:
            return row.status == self.status
        return re.match(self.start, row.error) is not None

    def said(self, count: int) -> str:
        return f"1 learner {self.one}" if count == 1 else f"{count} learners {self.many}"


# In the order the summary line names them; a note none of them covers is an error, shown on its own line.
NOTE_KINDS = (
    NoteKind("has figures but no model of its own: the budget went to the chosen one",
             "have figures but no model of their own: the budget went to the chosen one", start=r"no model: "),
    NoteKind("ships its hold-out refit as its model: a fit on all the bags would end past the budget",
             "ship their hold-out refit as their model: a fit on all the bags would end past the budget",
             start=r"model: its hold-out refit"),
    NoteKind("has no prediction sets: its fit without the calibration bags did not complete",
             "have no prediction sets: their fit without the calibration bags did not complete",
             start=r"no prediction sets: "),
    NoteKind("has no nested figure: an outer split has no completed trial",
             "have no nested figure: an outer split has no completed trial", start=r"no completed trial in outer "),
    NoteKind("has no full figure: the budget ran out during its final fits",
             "have no full figure: the budget ran out during their final fits",
             start=r"\w+ fit: (not started|stopped): the time budget ran out"),
    NoteKind("has no nested figure: a member's nested fit is missing",
             "have no nested figure: a member's nested fit is missing", start=r"a member's nested fit of outer "),
    NoteKind("has no result: its trials predicted one class for every bag they scored",
             "have no result: their trials predicted one class for every bag they scored",
             start=r"\d+ of \d+ trials predicted one class"),
    NoteKind("has no result: its trials predicted the same value for every bag they scored",
             "have no result: their trials predicted the same value for every bag they scored",
             start=r"\d+ of \d+ trials predicted the same value"),
    NoteKind("has no result: no trial completed", "have no result: no trial completed", start=r"no trial completed: "),
    NoteKind("is too slow: its defaults would not finish within its share of the budget",
             "are too slow: their defaults would not finish within their share of the budget", status=Status.TOO_SLOW),
    NoteKind("is screened: scored on a share of the bags only", "are screened: scored on a share of the bags only",
             status=Status.SCREENED),
    NoteKind("ran no trial within the budget", "ran no trial within the budget", status=Status.NO_TRIALS),
    NoteKind("is skipped: it cannot run on this data or within its memory share",
             "are skipped: they cannot run on this data or within their memory share", status=Status.SKIPPED),
)


def note_kind(row: LearnerResult) -> NoteKind | None:
    """The kind of a learner's note, ``None`` for an error (or a row without a note, or the procedure's)."""
    if not row.error or row.learner == PROCEDURE:
        return None
    return next((kind for kind in NOTE_KINDS if kind.covers(row)), None)


def note_line(row: LearnerResult) -> str:
    """A row's note in full: ``learner: status: note`` (the status left out where it is ``ok`` or the note
    starts with it)."""
    status = ("" if row.status in (None, Status.OK) or row.error.startswith(str(row.status))
              else f"{row.status}: ")
    return f"{row.learner}: {status}{row.error}"


def print_notes(rows: list[LearnerResult], verbose: bool):
    """The rows' notes: under ``verbose`` each in full; else the procedure's in full (it explains the
    ``automil`` row's figure), the others folded into one summary line by kind, each error on one short line."""
    noted = [row for row in rows if row.error]
    if verbose:
        for row in noted:
            print(note_line(row))
        return
    for row in noted:
        if row.learner == PROCEDURE:
            print_wrapped(note_line(row))
    counts = {}
    for row in noted:
        kind = note_kind(row)
        if kind is not None:
            counts[kind] = counts.get(kind, 0) + 1
    if counts:
        print_wrapped("; ".join(kind.said(counts[kind]) for kind in NOTE_KINDS if kind in counts)
                      + "; `--verbose` lists them.")
    for row in noted:
        if row.learner != PROCEDURE and note_kind(row) is None:
            print(textwrap.shorten(note_line(row), SCREEN_WIDTH, placeholder=" ... (`--verbose`: in full)"))
