"""The learners of one dataset compared where MLflow's UI shows them first.

After every tune, the dataset's experiment gets

- a ``rank`` metric on each learner's run (1 = best headline balanced accuracy; for survival Harrell's
  concordance, for regression R^2: the :class:`Measure` of the task the runs' ``automil.metric`` says);
- its description (``mlflow.note.content``, shown above the runs table) rewritten as the leaderboard: a
  first line naming the winner and the procedure's own nested figure (the UI folds the description to
  it) and a markdown table with each learner linked to its run, the procedure's run ``automil`` first;
- ``figures/comparison.png`` on every learner's run: balanced accuracy (the measure) with its spread and the mean fit
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
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure

from automil.records import PROCEDURE, LearnerResult, TrialState, metric_task
from automil.records.protocol import Protocol
from automil.track.reading.stored_studies import (
    StoredStudy,
    ranked_studies,
    read_studies,
    read_trials,
)
from automil.track.store.mlflow_store import retry
from automil.track.store.names import CHART, NOTE_TAG, SCATTER, automil_tag
from automil.track.writing.figures import pareto_figure

__all__ = ["refresh", "leaderboard_markdown", "comparison_figure", "trial_points", "Measure", "measure_of"]

METRIC_TAG = automil_tag("metric")  # a result's metric, on its run


@dataclass(frozen=True)
class Measure:
    """What the comparison shows of a task: the headline metric it ranks by and the one beside it, their
    column labels, their scale (100: in percent) and the headline's chance level (the chart's dotted line)."""

    name: str
    beside: str
    label: str
    beside_label: str
    scale: float
    chance: float
    words: str
    unit: str = ""  # after a figure: " %" where it is in percent

    def shown(self, metrics: dict, name: str) -> str:
        """``name``'s mean ± sd in ``metrics``: in percent, or to three decimals."""
        value = metrics.get(name)
        if value is None:
            return "-"
        std = metrics.get(f"{name}_std")
        digits = 1 if self.scale == 100 else 3
        return f"{self.scale * value:.{digits}f}" + ("" if std is None else f" ± {self.scale * std:.{digits}f}")


MEASURES = {"classification": Measure("balanced_accuracy", "accuracy", "BACC %", "ACC %", 100.0, 50.0,
                                      "balanced accuracy", " %"),
            "survival": Measure("concordance", "integrated_brier", "C", "IBS", 1.0, 0.5, "Harrell's concordance"),
            "regression": Measure("r2", "mae", "R2", "MAE", 1.0, 0.0, "R^2")}


def measure_of(ranked: list[StoredStudy]) -> Measure:
    """The measure of the studies' task, told by the metric their results were tuned for."""
    metric = next((s.tags.get(METRIC_TAG) for s in ranked if s.tags.get(METRIC_TAG)), None)
    return MEASURES[metric_task(metric)]


def leaderboard_markdown(dataset: str, experiment_id: str, ranked: list[StoredStudy], chart_run: str | None,
                         chosen: LearnerResult | None = None, scatter: bool = False) -> str:
    """The experiment description: the winner (and the chosen model, when the last tune chose one) on the
    first line, then the table and the chart (and the scatter of accuracy against cost, with ``scatter``)."""
    procedure, measure = next((s for s in ranked if s.learner == PROCEDURE), None), measure_of(ranked)
    scored = [s for s in ranked if s.metrics.get(measure.name) is not None and s is not procedure]
    protocol = {s.protocol for s in scored}
    headline = "nested CV" if protocol == {Protocol.NESTED} else "tuned protocol: optimistic" if protocol == {
        Protocol.TUNED} else "nested CV, or tuned († optimistic)"
    if scored:
        best = scored[0]
        first = (f"**{dataset}**: best **{best.learner}**, {measure.words} "
                 f"{measure.shown(best.metrics, measure.name)}{measure.unit} ({headline}){_chosen(chosen)}"
                 f"{_own(procedure, measure)}; "
                 f"{sum(s is not procedure for s in ranked)} learner(s), leaderboard below (unfold).")
    else:
        first = f"**{dataset}**: no learner has a result yet; {len(ranked)} learner(s) tuned."
    lines = [first, "",
             f"| rank | learner | {measure.label} | {measure.beside_label} | repeated-CV {measure.label} | fit s "
             "| trials | status |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for study in ranked:
        metrics = study.metrics
        rank = metrics.get("rank")
        dagger = " †" if study.optimistic and metrics.get(measure.name) else ""
        fit = metrics.get("fit_seconds")
        trials = metrics.get("trials")
        lines.append(
            f"| {'-' if rank is None else int(rank)} "
            f"| [{study.learner}](#/experiments/{experiment_id}/runs/{study.run_id}) "
            f"| {measure.shown(metrics, measure.name)}{dagger} | {measure.shown(metrics, measure.beside)}{dagger} "
            f"| {measure.shown(metrics, f'{measure.name}_repeated_cv')} | {'-' if fit is None else f'{fit:.2f}'} "
            f"| {'-' if trials is None else int(trials)} | {study.status or 'running'} |")
    lines += ["", "Each learner's run holds its trials (unfold it in the runs table sorted by Created), its figures "
                  f"and its model. {measure.label.removesuffix(' %')}: headline {measure.words}, mean ± sd over "
                  "folds."]
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


def _own(procedure: StoredStudy | None, measure: Measure) -> str:
    """The procedure's clause of the first line: its nested figure, when it has one."""
    if procedure is None or procedure.metrics.get(measure.name) is None:
        return ""
    return (f"; **{PROCEDURE}** itself (a learner chosen in each outer split on its inner folds) "
            f"{measure.shown(procedure.metrics, measure.name)}{measure.unit}")


def comparison_figure(dataset: str, ranked: list[StoredStudy]) -> Figure:
    """Balanced accuracy (the task's measure: :func:`measure_of`; mean ± sd) and mean fit time per learner,
    best at the top."""
    measure = measure_of(ranked)
    scored = [s for s in ranked if s.metrics.get(measure.name) is not None]
    names = [s.learner for s in scored][::-1]
    bacc = [measure.scale * s.metrics[measure.name] for s in scored][::-1]
    spread = [measure.scale * (s.metrics.get(f"{measure.name}_std") or 0.0) for s in scored][::-1]
    fit = [s.metrics.get("fit_seconds") or 0.0 for s in scored][::-1]
    height = 1.6 + 0.45 * max(len(names), 1)
    figure = Figure(figsize=(9, height))
    left, right = figure.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 2]})
    positions = list(range(len(names)))
    left.barh(positions, bacc, xerr=spread, color="#4c72b0", capsize=3)
    left.axvline(measure.chance, color="grey", linestyle=":", linewidth=1)
    left.set_yticks(positions, names)
    left.set_xlim(min(0.0, *(value - error for value, error in zip(bacc, spread))), measure.scale)
    left.set_xlabel(f"{measure.words}{',' + measure.unit if measure.unit else ''} (mean ± sd)")
    for y, value in zip(positions, bacc):
        left.text(left.get_xlim()[0] + measure.scale / 100, y, f"{value:.{1 if measure.scale == 100 else 3}f}",
                  va="center", color="white", fontsize=9)
    right.barh(positions, fit, color="#dd8452")
    right.set_xlabel("mean fit time, s")
    figure.suptitle(f"{dataset}: learners compared (headline figures; dotted: chance)")
    figure.tight_layout()
    return figure


def refresh(store, dataset: str, chosen: LearnerResult | None = None) -> None:
    """Rank, leaderboard and chart of ``dataset``'s experiment in ``store`` from the studies it holds;
    ``chosen`` is the row of the learner whose model the last tune chose and registered."""
    experiment_id = store.experiment_id(dataset)
    studies = read_studies(store, [dataset])
    measure = measure_of(studies)
    ranked = ranked_studies(studies, measure.name)
    now = int(time.time() * 1000)
    position = 0
    for index, study in enumerate(ranked):
        if study.metrics.get(measure.name) is None or study.learner == PROCEDURE:
            continue
        position += 1
        ranked[index] = dataclasses.replace(study, metrics={**study.metrics, "rank": position})
        retry(store.client.log_metric, study.run_id, "rank", position, now)
    scored = [s for s in ranked if "rank" in s.metrics]
    chart_run = None
    # some learner had several objectives (the scatter draws classification's accuracy)
    scatter = any("pareto_front_size" in s.metrics for s in ranked) and measure is MEASURES["classification"]
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
