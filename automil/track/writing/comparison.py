"""The learners of one dataset compared where MLflow's UI shows them first.

After every tune, the dataset's experiment gets

- a ``rank`` metric on each learner's run (1 = best headline balanced accuracy);
- its description (``mlflow.note.content``, shown above the runs table) rewritten as the leaderboard: a
  first line naming the winner and the procedure's own nested figure (the UI folds the description to
  it) and a markdown table with each learner linked to its run, the procedure's run ``automil`` first;
- ``figures/comparison.png`` on every learner's run: balanced accuracy with its spread and the mean fit
  time of each learner, drawn into the description too;
- ``figures/pareto.png`` beside it when a study was tuned for several objectives (``--objective``): every
  completed trial of every learner, balanced accuracy against fit time, with the Pareto fronts.

Metric names of a learner's run sort together by measure: ``balanced_accuracy`` (the headline),
``balanced_accuracy_nested``, ``balanced_accuracy_repeated_cv``, ``balanced_accuracy_tuning``, each spread
as ``<name>_std``; the same for ``accuracy`` (:func:`automil.track.store.names.metric_name`).
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path

from matplotlib.figure import Figure

from automil.records import PROCEDURE, LearnerResult, TrialState
from automil.records.protocol import Protocol
from automil.track.reading.stored_studies import (
    StoredStudy,
    ranked_studies,
    read_studies,
    read_trials,
)
from automil.track.store.mlflow_store import retry
from automil.track.store.names import CHART, NOTE_TAG, SCATTER
from automil.track.writing.figures import pareto_figure

__all__ = ["refresh", "leaderboard_markdown", "comparison_figure", "trial_points"]


def _pm(metrics: dict, name: str) -> str:
    value = metrics.get(name)
    if value is None:
        return "-"
    std = metrics.get(f"{name}_std")
    return f"{100 * value:.1f}" + ("" if std is None else f" ± {100 * std:.1f}")


def leaderboard_markdown(dataset: str, experiment_id: str, ranked: list[StoredStudy], chart_run: str | None,
                         chosen: LearnerResult | None = None, scatter: bool = False) -> str:
    """The experiment description: the winner (and the chosen model, when the last tune chose one) on the
    first line, then the table and the chart (and the scatter of accuracy against cost, with ``scatter``)."""
    procedure = next((s for s in ranked if s.learner == PROCEDURE), None)
    scored = [s for s in ranked if s.metrics.get("balanced_accuracy") is not None and s is not procedure]
    protocol = {s.protocol for s in scored}
    headline = "nested CV" if protocol == {Protocol.NESTED} else "tuned protocol: optimistic" if protocol == {
        Protocol.TUNED} else "nested CV, or tuned († optimistic)"
    if scored:
        best = scored[0]
        first = (f"**{dataset}**: best **{best.learner}**, balanced accuracy "
                 f"{_pm(best.metrics, 'balanced_accuracy')} % ({headline}){_chosen(chosen)}{_own(procedure)}; "
                 f"{sum(s is not procedure for s in ranked)} learner(s), leaderboard below (unfold).")
    else:
        first = f"**{dataset}**: no learner has a result yet; {len(ranked)} learner(s) tuned."
    lines = [first, "",
             "| rank | learner | BACC % | ACC % | repeated-CV BACC % | fit s | trials | status |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for study in ranked:
        metrics = study.metrics
        rank = metrics.get("rank")
        dagger = " †" if study.optimistic and metrics.get("balanced_accuracy") else ""
        fit = metrics.get("fit_seconds")
        trials = metrics.get("trials")
        lines.append(
            f"| {'-' if rank is None else int(rank)} "
            f"| [{study.learner}](#/experiments/{experiment_id}/runs/{study.run_id}) "
            f"| {_pm(metrics, 'balanced_accuracy')}{dagger} | {_pm(metrics, 'accuracy')}{dagger} "
            f"| {_pm(metrics, 'balanced_accuracy_repeated_cv')} | {'-' if fit is None else f'{fit:.2f}'} "
            f"| {'-' if trials is None else int(trials)} | {study.status or 'running'} |")
    lines += ["", "Each learner's run holds its trials (unfold it in the runs table sorted by Created), its figures "
                  "and its model. BACC: headline balanced accuracy, mean ± sd over folds."]
    if chart_run is not None:
        lines += ["", f"![learners compared](get-artifact?path={CHART}&run_uuid={chart_run})"]
        if scatter:
            lines += ["", f"![accuracy against fit time](get-artifact?path={SCATTER}&run_uuid={chart_run})"]
    lines += ["", f"_Updated by automil {time.strftime('%Y-%m-%d %H:%M', time.localtime())}._"]
    return "\n".join(lines)


def _chosen(chosen: LearnerResult | None) -> str:
    """The chosen model's clause of the first line (the selection may weigh fit time or another metric)."""
    if chosen is None:
        return ""
    registered = f", registered as `{chosen.model.registered}`" if chosen.model.registered else ""
    return f"; chosen model **{chosen.learner}**{registered}"


def _own(procedure: StoredStudy | None) -> str:
    """The procedure's clause of the first line: its nested figure, when it has one."""
    if procedure is None or procedure.metrics.get("balanced_accuracy") is None:
        return ""
    return (f"; **{PROCEDURE}** itself (a learner chosen in each outer split on its inner folds) "
            f"{_pm(procedure.metrics, 'balanced_accuracy')} %")


def comparison_figure(dataset: str, ranked: list[StoredStudy]) -> Figure:
    """Balanced accuracy (mean ± sd) and mean fit time per learner, best at the top."""
    scored = [s for s in ranked if s.metrics.get("balanced_accuracy") is not None]
    names = [s.learner for s in scored][::-1]
    bacc = [100 * s.metrics["balanced_accuracy"] for s in scored][::-1]
    spread = [100 * (s.metrics.get("balanced_accuracy_std") or 0.0) for s in scored][::-1]
    fit = [s.metrics.get("fit_seconds") or 0.0 for s in scored][::-1]
    height = 1.6 + 0.45 * max(len(names), 1)
    figure = Figure(figsize=(9, height))
    left, right = figure.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 2]})
    positions = list(range(len(names)))
    left.barh(positions, bacc, xerr=spread, color="#4c72b0", capsize=3)
    left.axvline(50, color="grey", linestyle=":", linewidth=1)
    left.set_yticks(positions, names)
    left.set_xlim(0, 100)
    left.set_xlabel("balanced accuracy, % (mean ± sd)")
    for y, value in zip(positions, bacc):
        left.text(1, y, f"{value:.1f}", va="center", color="white", fontsize=9)
    right.barh(positions, fit, color="#dd8452")
    right.set_xlabel("mean fit time, s")
    figure.suptitle(f"{dataset}: learners compared (headline figures; dotted: chance)")
    figure.tight_layout()
    return figure


def refresh(store, dataset: str, chosen: LearnerResult | None = None) -> None:
    """Rank, leaderboard and chart of ``dataset``'s experiment in ``store`` from the studies it holds;
    ``chosen`` is the row of the learner whose model the last tune chose and registered."""
    experiment_id = store.experiment_id(dataset)
    ranked = ranked_studies(read_studies(store, [dataset]))
    now = int(time.time() * 1000)
    position = 0
    for index, study in enumerate(ranked):
        if study.metrics.get("balanced_accuracy") is None or study.learner == PROCEDURE:
            continue
        position += 1
        ranked[index] = dataclasses.replace(study, metrics={**study.metrics, "rank": position})
        retry(store.client.log_metric, study.run_id, "rank", position, now)
    scored = [s for s in ranked if "rank" in s.metrics]
    chart_run = None
    scatter = any("pareto_front_size" in s.metrics for s in ranked)  # some learner had several objectives
    if scored:
        with tempfile.TemporaryDirectory(prefix="automil-comparison-") as tmp:
            figures = {CHART: lambda: comparison_figure(dataset, ranked)}
            if scatter:
                figures[SCATTER] = lambda: pareto_figure(
                    trial_points(store, dataset, ranked),
                    f"{dataset}: every completed trial, accuracy against cost (ringed: each learner's front)")
            for name, draw in figures.items():
                draw().savefig(Path(tmp) / Path(name).name, dpi=100)
            for study in scored:
                for name in figures:
                    retry(store.client.log_artifact, study.run_id, str(Path(tmp) / Path(name).name),
                          str(Path(name).parent))
        chart_run = scored[0].run_id
    retry(store.client.set_experiment_tag, experiment_id, NOTE_TAG,
          leaderboard_markdown(dataset, experiment_id, ranked, chart_run, chosen, scatter))


def trial_points(store, dataset: str, ranked: list[StoredStudy]) -> dict[str, list[tuple[float, float]]]:
    """``(mean fit seconds, balanced accuracy)`` of every completed trial of the studies in ``ranked``,
    per learner."""
    learners = {study.run_id: study.learner for study in ranked}
    points = {}
    for trial in read_trials(store, dataset):
        if trial.parent in learners and trial.state == TrialState.COMPLETE and \
                {"fit_seconds", "balanced_accuracy"} <= trial.metrics.keys():
            points.setdefault(learners[trial.parent], []).append(
                (trial.metrics["fit_seconds"], trial.metrics["balanced_accuracy"]))
    return points
