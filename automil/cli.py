"""The ``automil`` command: parse, call the core, print. Errors print one line unless ``--debug``."""

from __future__ import annotations

import argparse
import os
import sys

import automil


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
    text = str(error).strip() or type(error).__name__
    return " ".join(text.splitlines()) if len(text.splitlines()) <= 3 else text.splitlines()[0]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="automil",
        description="AutoML for multiple-instance learning: tune every learner on a dataset with Optuna, "
                    "track every trial in MLflow.",
    )
    parser.add_argument("--version", action="version", version=f"automil {automil.__version__}")
    _add_common(parser)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in (_add_learners, _add_datasets, _add_report, _add_ui):
        add(commands)
    return parser


def _add_common(parser):
    parser.add_argument("--data-dir", default=argparse.SUPPRESS if parser.prog != "automil" else None,
                        help="directory holding dataset files (default: $AUTOMIL_DATA_DIR, then the "
                             "download cache)")
    parser.add_argument("--debug", action="store_true",
                        default=argparse.SUPPRESS if parser.prog != "automil" else False,
                        help="show tracebacks and plugin load errors in full")


def _subcommand(commands, name, run, help, description=None):
    sub = commands.add_parser(name, help=help, description=description or help)
    _add_common(sub)
    sub.set_defaults(run=run)
    return sub


# ---- automil learners -------------------------------------------------------------------------------
def _add_learners(commands):
    _subcommand(commands, "learners", _run_learners, "list the registered learners")


def _run_learners(args) -> int:
    from automil import plugins

    registry = plugins.registry("learners")
    rows = [(spec.name, spec.plugin, "yes" if spec.multiclass else "no", "yes" if spec.witness else "no",
             spec.description) for spec in sorted(registry.learners.values(), key=lambda s: s.name.lower())]
    print_table(("learner", "plugin", "multi-class", "witness", "description"), rows)
    _warn_failures(registry)
    return 0


# ---- automil datasets -------------------------------------------------------------------------------
def _add_datasets(commands):
    _subcommand(commands, "datasets", _run_datasets, "list the registered datasets and whether their files "
                                                      "are available locally")


def _run_datasets(args) -> int:
    from automil import plugins

    registry = plugins.registry("datasets")
    rows = []
    for spec in sorted(registry.datasets.values(), key=lambda s: s.name):
        rows.append((spec.name, spec.plugin, _count(spec.n_bags), _count(spec.n_instances),
                     _count(spec.n_features), _count(spec.n_classes),
                     "yes" if spec.available() else "no (download)"))
    print_table(("dataset", "plugin", "bags", "instances", "features", "classes", "local"), rows)
    _warn_failures(registry)
    return 0


def _count(value) -> str:
    return "?" if value is None else f"{value:,}"


# ---- automil report ---------------------------------------------------------------------------------
def _add_report(commands):
    sub = _subcommand(commands, "report", _run_report, "the results table (datasets x learners) from MLflow",
                      "Print the paper-style table of every study in the tracking store: datasets as "
                      "columns, learners as rows, headline ACC and BACC as mean ± sd in %, T/O where every "
                      "trial timed out, the best of each column in bold.")
    sub.add_argument("--dataset", action="append", metavar="NAME",
                     help="only this dataset (repeatable; the columns keep this order)")
    sub.add_argument("--format", choices=("markdown", "html", "csv"), default="markdown",
                     help="output format (default markdown)")
    sub.add_argument("--tracking-uri", help="MLflow tracking URI (default $MLFLOW_TRACKING_URI, else "
                                            "sqlite:///mlruns/mlflow.db)")


def _run_report(args) -> int:
    from automil.report import build_table, render
    from automil.tracking import Tracker, default_tracking_uri

    uri = args.tracking_uri or default_tracking_uri()
    studies = Tracker(uri).studies(args.dataset)
    if not studies:
        raise ValueError(f"no automil study in the tracking store {uri}"
                         + (f" for dataset {', '.join(args.dataset)}" if args.dataset else "")
                         + "; run automil tune first, or pass --tracking-uri")
    print(render(build_table(studies, args.dataset), args.format), end="")
    return 0


# ---- automil ui -------------------------------------------------------------------------------------
def _add_ui(commands):
    sub = _subcommand(commands, "ui", _run_ui, "start the MLflow UI on the tracking store",
                      "Start the MLflow UI on automil's tracking store (one experiment per dataset, one "
                      "run per learner, nested runs per trial) and print its URL; Ctrl-C stops it.")
    sub.add_argument("--host", default="127.0.0.1",
                     help="interface to bind (default 127.0.0.1: this machine only)")
    sub.add_argument("--port", type=int, default=5000, help="port (default 5000)")
    sub.add_argument("--tracking-uri", help="MLflow tracking URI (default $MLFLOW_TRACKING_URI, else "
                                            "sqlite:///mlruns/mlflow.db)")


def _run_ui(args) -> int:
    import subprocess

    from automil.tracking import ui_command

    command = ui_command(args.tracking_uri, args.host, args.port)
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"automil: MLflow UI at http://{host}:{args.port} (store {command[command.index('--backend-store-uri') + 1]}); "
          "Ctrl-C stops it", flush=True)
    server = subprocess.Popen(command)
    try:
        return server.wait()
    except KeyboardInterrupt:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        return 0


# ---- output helpers ---------------------------------------------------------------------------------
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


def _warn_failures(registry):
    for name, reason in sorted(registry.failures.items()):
        print(f"automil: warning: plugin {name!r} was not loaded: {reason}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
