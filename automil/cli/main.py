"""The ``automil`` command: parse, call the core, print. Errors print one line unless ``--debug``."""

from __future__ import annotations

import argparse
import os
import sys

import automil
from automil.cli.common import add_common
from automil.cli.listing import add_datasets, add_learners
from automil.cli.predict import add_predict
from automil.cli.report import add_report
from automil.cli.track import add_track
from automil.cli.tune import add_run, add_tune
from automil.cli.ui import add_ui

__all__ = ["main", "build_parser"]


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.data_dir:
        os.environ["AUTOMIL_DATA_DIR"] = os.path.abspath(os.path.expanduser(args.data_dir))
    if args.debug:
        os.environ["AUTOMIL_DEBUG"] = "1"
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    try:
        return args.run(args) or 0
    except KeyboardInterrupt:
        print("automil: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - the one place errors become a message
        if args.debug:
            raise
        print(f"automil: error: {_message(error)}", file=sys.stderr)
        return 1


def _message(error: BaseException) -> str:
    text = _first_lines(error)
    # A library's wrapper (Optuna's "An exception is raised during the commit ...") hides what went wrong:
    # add the root cause ("database is locked", "connection refused").
    cause = error.__cause__
    while cause is not None and cause.__cause__ is not None:
        cause = cause.__cause__
    if cause is not None:
        reason = (str(cause).strip() or type(cause).__name__).splitlines()[0]
        if reason not in text:
            text += f" (cause: {type(cause).__name__}: {reason})"
    return text


def _first_lines(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return " ".join(text.splitlines()) if len(text.splitlines()) <= 3 else text.splitlines()[0]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="automil",
        description="AutoML for multiple-instance learning: tune every learner on a dataset with Optuna, "
                    "track every trial in MLflow.",
    )
    parser.add_argument("--version", action="version", version=f"automil {automil.__version__}")
    add_common(parser)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in (add_learners, add_datasets, add_tune, add_run, add_predict, add_report, add_track, add_ui):
        add(commands)
    return parser
