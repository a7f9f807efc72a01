"""``automil report``: the paper-style results table from the MLflow store."""

from __future__ import annotations

from pathlib import Path

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
    sub.add_argument("--kaplan-meier", metavar="DIR",
                     help="instead of the grid, copy every survival study's Kaplan-Meier curves of its held-out "
                          "patients (split at the training folds' median risk, log-rank p-value in the title) to "
                          "DIR/<dataset>/<learner>/kaplan_meier.png and list them with their C (docs/survival.md)")
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
    if args.kaplan_meier:
        print(_kaplan_meier_curves(tracker.store.client, studies, Path(args.kaplan_meier)))
        return 0
    print(render(build_table(studies, args.dataset, cost=args.fit_seconds), args.format), end="")
    return 0


def _kaplan_meier_curves(client, studies, out: Path) -> str:
    """Download each latest study's Kaplan-Meier figure under ``out``; the markdown list of them with the
    study's concordance, by dataset, the procedure's row then the best C first.
    ``ValueError`` when no study has one."""
    from automil.track.reading.stored_studies import ranked_studies
    from automil.track.store.mlflow_store import safe_name
    from automil.track.writing.figures import KAPLAN_MEIER

    lines = []
    for study in sorted(ranked_studies(studies, "concordance"), key=lambda s: s.dataset):
        folder = KAPLAN_MEIER.rsplit("/", 1)[0]
        if not any(entry.path == KAPLAN_MEIER for entry in client.list_artifacts(study.run_id, folder)):
            continue
        target = out / safe_name(study.dataset) / safe_name(study.learner)
        target.mkdir(parents=True, exist_ok=True)
        local = client.download_artifacts(study.run_id, KAPLAN_MEIER, str(target))
        concordance = study.metrics.get("concordance")
        lines.append(f"| {study.dataset} | {study.learner} | {'-' if concordance is None else f'{concordance:.3f}'} "
                     f"| {local} |")
    if not lines:
        raise ValueError("no study in the tracking store has Kaplan-Meier curves: they come from automil tune "
                         "--task survival under the nested or hold-out protocol")
    return "\n".join(["Held-out patients split at the training folds' median risk, the log-rank p-value in each "
                      "figure's title (docs/survival.md)", "", "| dataset | learner | C | curves |",
                      "| --- | --- | ---: | --- |", *lines])


def _against_published(studies, datasets) -> str:
    from automil import learners
    from automil.track.reading.against_published import render_comparisons

    published = {name: spec.published for name, spec in learners().items() if spec.published is not None}
    return render_comparisons(studies, published, datasets or sorted({study.dataset for study in studies}))
