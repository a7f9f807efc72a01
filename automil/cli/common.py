"""What every subcommand shares: the common options, the subparser set-up, the plain text table."""

from __future__ import annotations

import argparse
import sys
import textwrap
from dataclasses import replace

from automil.data.label_columns import LabelColumns
from automil.endpoints import TASKS

__all__ = ["add_common", "add_tracking_uri", "subcommand", "print_table", "print_wrapped", "SCREEN_WIDTH"]

# What a screen holds: the leaderboard's default table and its lines fit this many columns.
SCREEN_WIDTH = 160


def add_common(parser):
    parser.add_argument("--data-dir", default=argparse.SUPPRESS if parser.prog != "automil" else None,
                        help="directory holding dataset files (default: $AUTOMIL_DATA_DIR, then the "
                             "download cache)")
    parser.add_argument("--debug", action="store_true",
                        default=argparse.SUPPRESS if parser.prog != "automil" else False,
                        help="show tracebacks and plugin load errors in full")


def add_tracking_uri(sub):
    sub.add_argument("--tracking-uri", help="MLflow tracking URI (default $MLFLOW_TRACKING_URI, else "
                                            "sqlite:///mlruns/mlflow.db)")


def subcommand(commands, name, run, help, description=None):
    sub = commands.add_parser(name, help=help, description=description or help)
    add_common(sub)
    sub.set_defaults(run=run)
    return sub


def print_table(header, rows, file=None):
    """A plain, aligned text table."""
    rows = [tuple(str(c) for c in row) for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(header)]
    out = file or sys.stdout
    line = "  ".join(str(h).ljust(w) for h, w in zip(header, widths))
    print(line.rstrip(), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip(), file=out)


def print_wrapped(text: str, width: int = SCREEN_WIDTH):
    """``text`` with each of its lines wrapped at ``width`` columns (between words: a long word stays whole)."""
    for line in text.split("\n"):
        print(textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False) if line else "")


def add_slide_labels(sub) -> None:
    """``--labels``, ``--groups`` and the table's columns (``--task`` ... ``--covariates``, into ``args.columns``):
    how to read a slide feature folder (docs/data.md, "Slide features")."""
    sub.add_argument("--labels", metavar="CSV",
                     help="a slide feature folder's labels table (columns slide_id,label, optional case_id); "
                          "default: the one .csv beside the features")
    sub.add_argument("--groups", metavar="COLUMN",
                     help="the labels table's column of every slide's group (default case_id when it has "
                          "one): every split keeps a group's slides on one side")
    sub.set_defaults(columns=LabelColumns())
    sub.add_argument("--task", choices=TASKS, action=_Column,
                     help="what the labels are (default classification: the table's label column)")
    sub.add_argument("--time", metavar="COLUMN", action=_Column,
                     help="--task survival: the labels table's column of every bag's time (to the event, or to the "
                          "last follow-up when censored)")
    sub.add_argument("--event", metavar="COLUMN", action=_Column,
                     help="--task survival: the column of every bag's event, 1 observed, 0 censored")
    sub.add_argument("--target", metavar="COLUMN", action=_Column,
                     help="--task regression: the column of every bag's target value")
    sub.add_argument("--bag-by", metavar="COLUMN", action=_Column,
                     help="pool the rows (slides) with one value of this column into one bag named after it, e.g. "
                          "case_id: a bag per patient, its instances keeping their slide and coords")
    sub.add_argument("--covariates", metavar="COLUMNS", action=_Column,
                     help="comma-separated columns read as bag-level covariates: numbers as they are, other columns "
                          "one-hot (stage=II); a missing value is an error")


class _Column(argparse.Action):
    """Sets one field of ``args.columns`` (a :class:`~automil.data.label_columns.LabelColumns`), so that the six
    flags reach the options and ``load_bags`` as one value."""

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.columns = replace(namespace.columns, **{self.dest: values})
