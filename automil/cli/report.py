"""``automil report``: the paper-style results table from the MLflow store."""

from __future__ import annotations

from automil.cli.common import add_tracking_uri, subcommand

__all__ = ["add_report"]


# ---- automil report ---------------------------------------------------------------------------------
def add_report(commands):
    from automil.track.reading.results_table import FORMATS

    sub = subcommand(commands, "report", _run_report, "the results table (datasets x learners) from MLflow",
                      "Print the paper-style table of every study in the tracking store: datasets as "
                      "columns, learners as rows, headline ACC and BACC as mean ± sd in %, T/O where every "
                      "trial timed out, the best of each column in bold.")
    sub.add_argument("--dataset", action="append", metavar="NAME",
                     help="only this dataset (repeatable; the columns keep this order)")
    sub.add_argument("--format", choices=FORMATS, default="markdown",
                     help="output format (default markdown)")
    sub.add_argument("--published", action="store_true",
                     help="instead of the grid, one table per dataset: each learner's nested figure, its "
                          "figure on the papers' protocol (repeated CV at the tuned parameters) and the "
                          "accuracy its paper published, with the difference and the trials it had")
    sub.add_argument("--calibration", action="store_true",
                     help="instead of the grid, one table per dataset: each learner's calibration on held-out bags "
                          "(ECE, Brier score and log-loss beside its raw scores'; the conformal sets' measured "
                          "coverage, set size and abstention), the chosen model marked (docs/probabilities.md)")
    sub.add_argument("--fit-seconds", action="store_true",
                     help="add each study's mean seconds per fit (shown anyway when a study was tuned for "
                          "accuracy against cost)")
    add_tracking_uri(sub)


def _run_report(args) -> int:
    from automil.track import Tracker, default_tracking_uri
    from automil.track.reading.results_table import build_table, render
    from automil.uris import shown_storage

    uri = args.tracking_uri or default_tracking_uri()
    tracker = Tracker(uri, create=False)
    studies = tracker.studies(args.dataset)
    if not studies:
        raise ValueError(f"no automil study in the tracking store {shown_storage(uri)}"
                         + (f" for dataset {', '.join(args.dataset)}" if args.dataset else "")
                         + "; run automil tune first, or pass --tracking-uri")
    if args.published:
        print(_against_published(studies, args.dataset), end="")
        return 0
    if args.calibration:
        from automil.track.reading.calibration_table import calibration_tables, chosen_runs

        print(calibration_tables(studies, chosen_runs(tracker.store.client, {s.dataset for s in studies})))
        return 0
    print(render(build_table(studies, args.dataset, cost=args.fit_seconds), args.format), end="")
    return 0


def _against_published(studies, datasets) -> str:
    from automil import learners
    from automil.track.reading.against_published import render_comparisons

    published = {name: spec.published for name, spec in learners().items() if spec.published is not None}
    return render_comparisons(studies, published, datasets or sorted({study.dataset for study in studies}))
