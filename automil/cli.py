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
    _add_common(parser)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in (_add_learners, _add_datasets, _add_tune, _add_run, _add_report, _add_ui):
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


# ---- automil tune -----------------------------------------------------------------------------------
def _add_tune(commands):
    sub = _subcommand(commands, "tune", _run_tune, "tune learners on a dataset with Optuna and rank them",
                      "Tune every learner (or those given) on a dataset: one persistent Optuna study per "
                      "learner, fixed folds over bags, every fit in a worker process killed at "
                      "--fit-timeout, then an honest leaderboard (nested cross-validation). Rerun the same "
                      "command to continue; run it on several processes or machines to share the work.")
    sub.add_argument("--dataset", required=True, help="registered dataset name or a bag file")
    sub.add_argument("--learner", action="append", metavar="NAME",
                     help="learner to tune (repeatable; default: every learner that fits the data)")
    _add_tune_options(sub, defaults=True)


def _add_tune_options(sub, defaults: bool):
    """Options shared by ``tune`` and ``run`` (``run`` takes them from the study file unless given)."""
    from automil.storage import DEFAULT_STORAGE
    from automil.tuning import METRICS, PROTOCOLS, SAMPLERS, TuneOptions, parse_size

    d = TuneOptions() if defaults else None

    def default(name):
        return getattr(d, name) if defaults else None

    if defaults:
        sub.add_argument("--n-trials", type=_count_or_none, default=d.n_trials, metavar="N",
                         help=f"trials per study (default {d.n_trials}; 'none': until --timeout)")
        sub.add_argument("--timeout", type=_seconds_or_none, default=d.timeout, metavar="SECONDS",
                         help=f"budget of the whole run: {int(d.timeout)} s by default, 3/4 tuning and the "
                              "rest for the final evaluation; 'none': no limit")
        sub.add_argument("--fit-timeout", type=float, default=d.fit_timeout, metavar="SECONDS",
                         help=f"a fit running longer is killed and its trial recorded T/O (default "
                              f"{int(d.fit_timeout)})")
        sub.add_argument("--folds", type=int, default=d.folds, help=f"k of k-fold CV (default {d.folds})")
        sub.add_argument("--repeats", type=int, default=d.repeats,
                         help=f"repeats of the CV re-evaluating the best parameters (default {d.repeats})")
        sub.add_argument("--metric", choices=METRICS, default=d.metric,
                         help="what the tuner maximizes (both are recorded; default balanced_accuracy)")
        sub.add_argument("--seed", type=int, default=d.seed, help="seeds folds, samplers and learners")
        sub.add_argument("--sampler", choices=SAMPLERS, default=d.sampler, help="Optuna sampler")
        sub.add_argument("--protocol", choices=PROTOCOLS, default=d.protocol,
                         help="nested (default): headline scores from folds the tuner never saw; tuned: tune "
                              "and score on the same folds (the papers' protocol, optimistic)")
        sub.add_argument("--fit-memory", type=parse_size, default=None, metavar="SIZE",
                         help="kill a fit whose process passes this resident memory (e.g. 4G; Linux)")
    sub.add_argument("--jobs", type=int, default=default("jobs"),
                     help="tuning processes on this machine sharing the storage (default: one per core, "
                          "at most 4)")
    sub.add_argument("--storage", default=default("storage"),
                     help=f"study storage: journal:PATH (default {DEFAULT_STORAGE}; safe for local "
                          "processes), sqlite:///FILE (one process) or postgresql://... (many machines)")
    sub.add_argument("--json", nargs="?", const="-", metavar="PATH",
                     help="write the leaderboard as JSON (to PATH, or to stdout instead of the table)")
    sub.add_argument("--no-track", dest="track", action="store_false", default=None if not defaults else True,
                     help="do not log to MLflow")
    sub.add_argument("--tracking-uri", help="MLflow tracking URI (default $MLFLOW_TRACKING_URI, else "
                                            "sqlite:///mlruns/mlflow.db)")


def _run_tune(args) -> int:
    from automil.storage import shown_storage
    from automil.progress import Progress
    from automil.tuning import TuneOptions, tune

    options = TuneOptions(**{name: getattr(args, name) for name in TuneOptions.__dataclass_fields__})
    try:
        rows = tune(args.dataset, args.learner, options, progress=Progress())
    except KeyboardInterrupt:
        print(f"automil: interrupted; every completed trial is kept in {shown_storage(options.storage)}: run the same command "
              "to continue", file=sys.stderr)
        return 130
    return _print_leaderboard(rows, args.json)


def _print_leaderboard(rows, json_path, table=True) -> int:
    """The leaderboard as a table, and as JSON to ``json_path`` ('-': to stdout instead of the table)."""
    import json

    if json_path:
        text = json.dumps(rows, indent=2)
        if json_path == "-":
            print(text)
            return 0
        with open(json_path, "w") as f:
            f.write(text + "\n")
    if not rows or not table:
        return 0
    nested = rows[0]["protocol"] == "nested"
    metric = "BACC" if rows[0]["metric"] == "balanced_accuracy" else "ACC"
    head = "nested" if nested else "tuned*"
    header = ("learner", f"ACC ({head})", f"BACC ({head})", "repeated-CV ACC", "repeated-CV BACC",
              f"tuning {metric}*", "fit s", "trials", "T/O", "best parameters")
    table = []
    for row in rows:
        if row["status"] in ("T/O", "failed", "no result", "no trials", "skipped"):
            what = row["status"] if row["status"] != "skipped" else f"skipped: {row['error']}"
            table.append((row["learner"], what, what, "", "", "", "", row["trials"],
                          row.get("trials_timed_out", ""), (row.get("error") or "")[:70]
                          if row["status"] != "T/O" else ""))
            continue
        table.append((row["learner"], _pm(row["accuracy"], row["accuracy_std"]),
                      _pm(row["balanced_accuracy"], row["balanced_accuracy_std"]),
                      _pm(row["repeated_accuracy"], row["repeated_accuracy_std"]),
                      _pm(row["repeated_balanced_accuracy"], row["repeated_balanced_accuracy_std"]),
                      _pm(row["tuning_score"], None),
                      "-" if row["fit_seconds"] is None else f"{row['fit_seconds']:.2f}",
                      row["trials"], row["trials_timed_out"], _params(row["best_params"])))
    print_table(header, table)
    first = rows[0]
    print(f"\n{first['dataset']}: {first['folds']}-fold CV over bags, seed {first['seed']}; repeated CV = "
          f"best parameters re-evaluated over {max(r.get('repeats') or 0 for r in rows)} repeats (mean +- sd "
          "over repeats).")
    print("* optimistic: scored on the folds the parameters were tuned on." + (
        "" if nested else " Use --protocol nested for scores from folds the tuner never saw."))
    for row in rows:
        if row["status"] in ("partial", "no result") and row.get("error"):
            print(f"{row['learner']}: {row['status']}: {row['error']}")
    return 0


def _pm(mean, std) -> str:
    if mean is None:
        return "-"
    return f"{100 * mean:.1f}" + ("" if std is None else f" +- {100 * std:.1f}")


def _params(params) -> str:
    if not params:
        return ""
    return " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def _count_or_none(text):
    return None if text.lower() == "none" else int(text)


def _seconds_or_none(text):
    return None if text.lower() == "none" else float(text)


# ---- automil run ------------------------------------------------------------------------------------
def _add_run(commands):
    sub = _subcommand(commands, "run", _run_run, "run the studies a TOML file declares",
                      "Run a grid of datasets x learners with the budgets a study file declares (see "
                      "studies/quickstart.toml); options given here override the file.")
    sub.add_argument("study_file", metavar="FILE", help="a study file, e.g. studies/quickstart.toml")
    _add_tune_options(sub, defaults=False)


def _run_run(args) -> int:
    from automil.progress import Progress
    from automil.tuning import read_study_file, tune

    overrides = {name: getattr(args, name) for name in ("jobs", "storage", "track", "tracking_uri")
                 if getattr(args, name) is not None}
    rows = []
    for dataset, learners, options in read_study_file(args.study_file, overrides):
        found = tune(dataset, learners, options, progress=Progress())
        rows += found
        if args.json != "-":
            _print_leaderboard(found, None)
            print()
    return _print_leaderboard(rows, args.json, table=False) if args.json else 0


# ---- automil report ---------------------------------------------------------------------------------
def _add_report(commands):
    from automil.report import FORMATS

    sub = _subcommand(commands, "report", _run_report, "the results table (datasets x learners) from MLflow",
                      "Print the paper-style table of every study in the tracking store: datasets as "
                      "columns, learners as rows, headline ACC and BACC as mean ± sd in %, T/O where every "
                      "trial timed out, the best of each column in bold.")
    sub.add_argument("--dataset", action="append", metavar="NAME",
                     help="only this dataset (repeatable; the columns keep this order)")
    sub.add_argument("--format", choices=FORMATS, default="markdown",
                     help="output format (default markdown)")
    sub.add_argument("--tracking-uri", help="MLflow tracking URI (default $MLFLOW_TRACKING_URI, else "
                                            "sqlite:///mlruns/mlflow.db)")


def _run_report(args) -> int:
    from automil.report import build_table, render
    from automil.tracking import Tracker, default_tracking_uri
    from automil.storage import shown_storage

    uri = args.tracking_uri or default_tracking_uri()
    studies = Tracker(uri, create=False).studies(args.dataset)
    if not studies:
        raise ValueError(f"no automil study in the tracking store {shown_storage(uri)}"
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

    from automil.tracking import default_tracking_uri, start_ui
    from automil.storage import shown_storage

    uri = args.tracking_uri or default_tracking_uri()
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"automil: MLflow UI at http://{host}:{args.port} (store {shown_storage(uri)}); Ctrl-C stops it", flush=True)
    server = start_ui(uri, args.host, args.port)
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
