"""``automil tune`` and ``automil run``: tune, then print the leaderboard."""

from __future__ import annotations

import functools
import sys

from automil.cli.common import add_slide_labels, add_tracking_uri, print_wrapped, subcommand
from automil.cli.leaderboard_notes import print_notes
from automil.cli.leaderboard_table import measured, print_rows
from automil.evaluation.metrics import LABELS
from automil.records import DEFAULT_LEVEL, LEVELS, PROCEDURE, CalibrationFigures, LearnerResult
from automil.records.calibration import level_key
from automil.uris import shown_storage

__all__ = ["add_tune", "add_run"]


# ---- automil tune -----------------------------------------------------------------------------------
def add_tune(commands):
    sub = subcommand(commands, "tune", _run_tune, "tune learners on a dataset with Optuna and rank them",
                      "Tune every learner (or those given) on a dataset: one persistent Optuna study per "
                      "learner, fixed folds over bags, every fit in a worker process killed at "
                      "--fit-timeout, then an honest leaderboard (nested cross-validation). Rerun the same "
                      "command to continue; run it on several processes or machines to share the work.")
    sub.add_argument("--dataset", required=True, help="registered dataset name or a bag file")
    add_slide_labels(sub)
    sub.add_argument("--learner", action="append", metavar="NAME",
                     help="learner to tune (repeatable; default: every learner that fits the data)")
    _add_tune_options(sub, defaults=True)
    _add_verbose(sub)


def _add_verbose(sub):
    """``--verbose``: the leaderboard's every column and note (by default it fits one screen)."""
    sub.add_argument("--verbose", action="store_true",
                     help="print the leaderboard's every column (repeated CV, tuning, budget, instance figures, best "
                          "parameters) and every learner's note in full")


def _add_tune_options(sub, defaults: bool):
    """Options shared by ``tune`` and ``run`` (``run`` takes them from the study file unless given)."""
    from automil.records.protocol import Protocol
    from automil.tune.options import (
        DEFAULT_FOLDS,
        DEFAULT_STORAGE,
        METRICS,
        OBJECTIVES,
        Allocation,
        Sampler,
        TuneOptions,
        parse_size,
    )

    d = TuneOptions() if defaults else None

    def default(name):
        return getattr(d, name) if defaults else None

    if defaults:
        sub.add_argument("--n-trials", type=_count_or_none, default=d.n_trials, metavar="N",
                         help=f"trials per study (default {d.n_trials}; 'none': until --timeout)")
        sub.add_argument("--timeout", type=_seconds_or_none, default=d.timeout, metavar="SECONDS",
                         help=f"budget of the whole run: {int(d.timeout)} s by default; the final evaluation "
                              "keeps its estimated cost (1/4 to 1/2), tuning the rest; 'none': no limit")
        sub.add_argument("--fit-timeout", type=float, default=d.fit_timeout, metavar="SECONDS",
                         help=f"a fit running longer is killed and its trial recorded T/O (default "
                              f"{int(d.fit_timeout)})")
        sub.add_argument("--folds", type=int, default=None,
                         help=f"k of k-fold CV (default {DEFAULT_FOLDS}, fewer where a test fold would hold fewer "
                              "than 8 bags or 2 of a class; or as many as --folds-file holds)")
        sub.add_argument("--repeats", type=int, default=d.repeats,
                         help=f"repeats of the CV re-evaluating the best parameters (default {d.repeats}; with "
                              "--folds-file at most as many as it holds)")
        sub.add_argument("--metric", choices=METRICS, default=None,
                         help="what the tuner maximizes (every metric of the task is recorded; default the "
                              "task's: balanced_accuracy, concordance for survival, r2 for regression)")
        sub.add_argument("--objective", dest="objectives", action="append", default=[], metavar="NAME",
                         help=f"repeatable: two or more ({', '.join(OBJECTIVES)}) tune for a Pareto front of "
                              "accuracy against cost, the first (a metric) choosing the best model")
        sub.add_argument("--seed", type=int, default=d.seed, help="seeds folds, samplers and learners")
        sub.add_argument("--sampler", choices=tuple(Sampler), default=d.sampler, help="Optuna sampler")
        sub.add_argument("--allocation", choices=list(Allocation), default=d.allocation,
                         help="after every learner's defaults: promise (default) gives the time to the learners "
                              "close to the best; equal gives every learner the same seconds")
        sub.add_argument("--protocol", choices=list(Protocol), default=d.protocol,
                         help="auto (default): nested below 4M instance values, holdout from there; nested: "
                              "headline scores from outer folds the tuner never saw; holdout: one quarter of the "
                              "bags held out (4 folds), tuned on the rest by 3-fold CV, learners screened on "
                              "shares of the bags first; tuned: tune and score on the same folds (the papers' "
                              "protocol, optimistic)")
        sub.add_argument("--no-warm-start", dest="warm_start", action="store_false", default=d.warm_start,
                         help="do not try, after a learner's defaults, its best parameters from the most "
                              "similar other dataset tuned in the same storage")
        sub.add_argument("--portfolio", metavar="PATH", default=d.portfolio,
                         help="the portfolio whose configurations run first, in its order (default: the one "
                              "automil ships; experiments/portfolio.py builds one from a benchmark matrix)")
        sub.add_argument("--no-portfolio", dest="portfolio", action="store_const", const=None,
                         help="start every learner from its plugin's defaults, cheapest first, instead of the "
                              "portfolio's configurations for data of this kind, in the portfolio's order")
        sub.add_argument("--fit-memory", type=parse_size, default=None, metavar="SIZE",
                         help="kill a fit whose process passes this resident memory (e.g. 4G; Linux)")
        sub.add_argument("--memory", type=parse_size, default=None, metavar="SIZE",
                         help="the run's memory budget (e.g. 16G): a learner whose fit on every bag is estimated "
                              "above its share (SIZE / --jobs) is not started, and its row says why (default: "
                              "the machine's memory less a tenth, at least 1 GiB)")
    sub.add_argument("--folds-file", metavar="PATH",
                     help="the folds (and repeats) of a folds.json, such as the artifact of an earlier run "
                          "(docs/protocol.md, \"Shareable folds\")")
    sub.add_argument("--no-ensemble", dest="ensemble", action="store_false", default=True if defaults else None,
                     help="no ensemble row (by default, with two or more learners, ensemble selection over "
                          "their best trials is scored like a learner and can be the chosen model)")
    sub.add_argument("--jobs", type=int, default=default("jobs"),
                     help="tuning processes on this machine sharing the storage (default: one per core, "
                          "at most 4)")
    sub.add_argument("--storage", default=default("storage"),
                     help=f"study storage: journal:PATH (default {DEFAULT_STORAGE}; safe for local "
                          "processes), sqlite:///FILE (one process) or postgresql://... (many machines)")
    sub.add_argument("--scratch", metavar="DIR", default=None,
                     help="the directory of the run's one file of the instances, which every process maps "
                          "(default: the temporary directory; give a disk when that is a memory-backed tmpfs)")
    sub.add_argument("--json", nargs="?", const="-", metavar="PATH",
                     help="write the leaderboard as JSON (to PATH, or to stdout instead of the table)")
    sub.add_argument("--no-track", dest="track", action="store_false", default=None if not defaults else True,
                     help="do not log to MLflow")
    add_tracking_uri(sub)


def _run_tune(args) -> int:
    from automil.cli.progress import Progress
    from automil.tune.driver import tune
    from automil.tune.options import TuneOptions
    options = TuneOptions(**{name: getattr(args, name) for name in TuneOptions.__dataclass_fields__})
    try:
        results = tune(args.dataset, args.learner, options, Progress(), _tracking(options))
    except KeyboardInterrupt:
        print(f"automil: interrupted; every completed trial is kept in {shown_storage(options.storage)}: run the "
              "same command to continue", file=sys.stderr)
        return 130
    return print_leaderboard(results, args.json, verbose=args.verbose)


def _tracking(options):
    """The tracking factory ``tune`` calls in every tuning process, or ``None`` with ``--no-track``."""
    from automil.track.outage.tolerant import open_tracker

    return functools.partial(open_tracker, options.tracking_uri) if options.track else None


def print_leaderboard(rows: list[LearnerResult], json_path, table=True, verbose=False) -> int:
    """The leaderboard as a table (every column and note in full under ``verbose``), and as JSON to
    ``json_path`` ('-': to stdout instead of the table)."""
    import json

    if json_path:
        text = json.dumps([row.to_dict() for row in rows], indent=2)
        if json_path == "-":
            print(text)
            return 0
        with open(json_path, "w") as f:
            f.write(text + "\n")
    if not rows or not table:
        return 0
    print_rows(rows, verbose)
    print_notes(rows, verbose)
    _print_choice(rows)
    return 0


def _print_choice(rows: list[LearnerResult]):
    """Which model the run chose, its calibration, and how to apply it."""
    chosen = next((row for row in rows if row.model.selected), None)
    if chosen is None:
        print()
        print_wrapped("No model chosen: no learner's tuning score is above chance by its uncertainty over the bags "
                      "it scored (learners whose out-of-fold predictions give every bag one class are never chosen).")
        return
    model = chosen.model
    where = (f", registered as {model.registered}" if model.registered
             else " (not tracked: no model logged)" if not model.uri else "")
    metric = chosen.metric or "balanced_accuracy"
    procedure = next((row for row in rows if row.learner == PROCEDURE and row.metric_value() is not None), None)
    own = "" if procedure is None else (f"; {PROCEDURE}'s own nested {LABELS[metric]} "
                                        f"{measured(procedure.headline, metric)}, choosing blind to each outer fold")
    print()
    print_wrapped(f"Chosen: {chosen.learner} ({chosen.headline.kind} {LABELS[metric]} "
                  f"{measured(chosen.headline, metric)}{own}){where}.")
    if chosen.tuning.score is not None:
        print_wrapped(f"Chosen on its tuning {LABELS[metric]} {chosen.tuning.score:.3f}, by the rule the {PROCEDURE} "
                      f"row measures; the rows' {chosen.headline.kind} figures are not a basis for choosing.")
    for row in (chosen, procedure):
        if row is not None and row.calibration is not None:
            print_wrapped(calibration_lines(row.learner, row.calibration))
    if model.registered:
        name = model.registered.rsplit("/", 1)[0]
        print(f"Apply it: automil predict {name}/latest --dataset NAME_OR_FILE")


def calibration_lines(learner: str, figures: CalibrationFigures) -> str:
    """Lines on a row's calibration figures (``docs/probabilities.md``), its probabilities against its raw
    scores, and where the row's prediction sets were measured a second and third: their coverage beside the band
    the guarantee allows, their mean size with the abstention rate at the default coverage."""
    levels = " / ".join(f"{c:g}" for c in LEVELS)

    def each(values: dict, digits: int = 2) -> str:
        return " / ".join(f"{values[level_key(c)]:.{digits}f}" for c in LEVELS)

    line = (f"{learner}: on the {figures.held_out_bags} held-out bags (calibrated without them), probabilities "
            f"(raw scores): "
            f"ECE {figures.ece:.3f} ({figures.raw_ece:.3f}), Brier {figures.brier:.3f} ({figures.raw_brier:.3f}), "
            f"log-loss {figures.log_loss:.3f} ({figures.raw_log_loss:.3f})")
    if not figures.coverage:
        return line + "."
    bands = " / ".join("{:g}-{:.3f}".format(*figures.band(c)) for c in LEVELS)
    errors = " / ".join(f"{figures.standard_error(c):.3f}" for c in LEVELS)
    worst = figures.worst_class(DEFAULT_LEVEL)
    return (f"{line};\n  prediction sets at {levels}: coverage {each(figures.coverage)} (guaranteed {bands}; "
            f"binomial SE {errors}),\n  mean size {each(figures.set_size)}"
            + ("" if worst is None else f", worst class {worst:.2f} at {DEFAULT_LEVEL:g}")
            + f"; abstains on {100 * figures.abstention[level_key(DEFAULT_LEVEL)]:.1f}% of bags at {DEFAULT_LEVEL:g}.")


def _count_or_none(text):
    return None if text.lower() == "none" else int(text)


def _seconds_or_none(text):
    return None if text.lower() == "none" else float(text)


# ---- automil run ------------------------------------------------------------------------------------
def add_run(commands):
    sub = subcommand(commands, "run", _run_run, "run the studies a TOML file declares",
                      "Run a grid of datasets x learners with the budgets a study file declares (see "
                      "studies/quickstart.toml); options given here override the file.")
    sub.add_argument("study_file", metavar="FILE", help="a study file, e.g. studies/quickstart.toml")
    _add_tune_options(sub, defaults=False)
    _add_verbose(sub)


def _run_run(args) -> int:
    from automil.cli.progress import Progress
    from automil.tune.driver import tune
    from automil.tune.options import read_study_file

    overrides = {name: getattr(args, name) for name in ("jobs", "storage", "folds_file", "ensemble", "track",
                                                         "tracking_uri", "scratch")
                 if getattr(args, name) is not None}
    rows = []
    for dataset, learners, options in read_study_file(args.study_file, overrides):
        found = tune(dataset, learners, options, Progress(), _tracking(options))
        rows += found
        if args.json != "-":
            print_leaderboard(found, None, verbose=args.verbose)
            print()
    return print_leaderboard(rows, args.json, table=False) if args.json else 0
