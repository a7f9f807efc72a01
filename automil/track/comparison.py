"""The learners of one dataset compared where MLflow's UI shows them first.

After every tune, the dataset's experiment gets

- a ``rank`` metric on each learner's run (1 = best headline balanced accuracy);
- its description (``mlflow.note.content``, shown above the runs table) rewritten as the leaderboard: a
  first line naming the winner (the UI folds the description to it) and a markdown table with each
  learner linked to its run;
- ``figures/comparison.png`` on every learner's run: balanced accuracy with its spread and the mean fit
  time of each learner, drawn into the description too;
- ``figures/pareto.png`` beside it when a study was tuned for several objectives (``--objective``): every
  completed trial of every learner, balanced accuracy against fit time, with the Pareto fronts.

Metric names of a learner's run sort together by measure: ``balanced_accuracy`` (the headline),
``balanced_accuracy_nested``, ``balanced_accuracy_repeated_cv``, ``balanced_accuracy_tuning``, each spread
as ``<name>_std``; the same for ``accuracy``. :func:`metric_name` maps the driver's row keys to them.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from matplotlib.figure import Figure

from automil.track.figures import pareto_figure
from automil.records import LearnerResult
from automil.track.store import NOTE_TAG, retry

__all__ = ["metric_name", "refresh", "leaderboard_markdown", "comparison_figure", "trial_points"]

CHART = "figures/comparison.png"
SCATTER = "figures/pareto.png"
_VARIANTS = (("nested_", "_nested"), ("repeated_", "_repeated_cv"))


def metric_name(key: str, tuned_metric: str | None = None) -> str:
    """The run metric for the row key ``key``: ``nested_accuracy_std`` -> ``accuracy_nested_std``,
    ``repeated_balanced_accuracy`` -> ``balanced_accuracy_repeated_cv``, ``tuning_score`` ->
    ``<tuned metric>_tuning``; any other key unchanged."""
    if key == "tuning_score" and tuned_metric:
        return f"{tuned_metric}_tuning"
    for prefix, suffix in _VARIANTS:
        if key.startswith(prefix):
            measure = key[len(prefix):]
            std = measure.endswith("_std")
            return measure.removesuffix("_std") + suffix + ("_std" if std else "")
    return key


def _latest_per_learner(studies: list[dict]) -> list[dict]:
    """One study per learner: the most recently finished (as ``automil report`` chooses), ranked by
    headline balanced accuracy, best first; studies without a figure last, by name."""
    latest = {}
    for study in studies:
        learner = study["learner"]
        if learner not in latest or study["end_time"] > latest[learner]["end_time"]:
            latest[learner] = study

    def key(study):
        value = study["metrics"].get("balanced_accuracy")
        return value is None, -(value or 0.0), study["learner"].lower()

    return sorted(latest.values(), key=key)


def _pm(metrics: dict, name: str) -> str:
    value = metrics.get(name)
    if value is None:
        return "-"
    std = metrics.get(f"{name}_std")
    return f"{100 * value:.1f}" + ("" if std is None else f" ± {100 * std:.1f}")


def leaderboard_markdown(dataset: str, experiment_id: str, ranked: list[dict], chart_run: str | None,
                         chosen: LearnerResult | None = None, scatter: bool = False) -> str:
    """The experiment description: the winner (and the chosen model, when the last tune chose one) on the
    first line, then the table and the chart (and the scatter of accuracy against cost, with ``scatter``)."""
    scored = [s for s in ranked if s["metrics"].get("balanced_accuracy") is not None]
    protocol = {s["tags"].get("automil.protocol", "nested") for s in scored}
    headline = "nested CV" if protocol == {"nested"} else "tuned protocol: optimistic" if protocol == {
        "tuned"} else "nested CV, or tuned († optimistic)"
    if scored:
        best = scored[0]
        first = (f"**{dataset}**: best **{best['learner']}**, balanced accuracy "
                 f"{_pm(best['metrics'], 'balanced_accuracy')} % ({headline}){_chosen(chosen)}; "
                 f"{len(ranked)} learner(s), leaderboard below (unfold).")
    else:
        first = f"**{dataset}**: no learner has a result yet; {len(ranked)} learner(s) tuned."
    lines = [first, "",
             "| rank | learner | BACC % | ACC % | repeated-CV BACC % | fit s | trials | status |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for study in ranked:
        metrics, tags = study["metrics"], study["tags"]
        rank = metrics.get("rank")
        dagger = " †" if tags.get("automil.protocol") == "tuned" and metrics.get("balanced_accuracy") else ""
        fit = metrics.get("fit_seconds")
        trials = metrics.get("trials")
        lines.append(
            f"| {'-' if rank is None else int(rank)} "
            f"| [{study['learner']}](#/experiments/{experiment_id}/runs/{study['run_id']}) "
            f"| {_pm(metrics, 'balanced_accuracy')}{dagger} | {_pm(metrics, 'accuracy')}{dagger} "
            f"| {_pm(metrics, 'balanced_accuracy_repeated_cv')} | {'-' if fit is None else f'{fit:.2f}'} "
            f"| {'-' if trials is None else int(trials)} | {study['status'] or 'running'} |")
    lines += ["", "Each learner's run holds its trials (unfold it in the runs table), its figures and its "
                  "model. BACC: headline balanced accuracy, mean ± sd over folds."]
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
    registered = f", registered as `{chosen.registered_model}`" if chosen.registered_model else ""
    return f"; chosen model **{chosen.learner}**{registered}"


def comparison_figure(dataset: str, ranked: list[dict]) -> Figure:
    """Balanced accuracy (mean ± sd) and mean fit time per learner, best at the top."""
    scored = [s for s in ranked if s["metrics"].get("balanced_accuracy") is not None]
    names = [s["learner"] for s in scored][::-1]
    bacc = [100 * s["metrics"]["balanced_accuracy"] for s in scored][::-1]
    spread = [100 * (s["metrics"].get("balanced_accuracy_std") or 0.0) for s in scored][::-1]
    fit = [s["metrics"].get("fit_seconds") or 0.0 for s in scored][::-1]
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


def refresh(tracker, dataset: str, chosen: LearnerResult | None = None) -> None:
    """Rank, leaderboard and chart of ``dataset``'s experiment from the studies in the store; ``chosen``
    is the row of the learner whose model the last tune chose and registered."""
    client = tracker.client
    experiment_id = tracker.experiment_id(dataset)
    ranked = _latest_per_learner(tracker.studies([dataset]))
    now = int(time.time() * 1000)
    position = 0
    for study in ranked:
        if study["metrics"].get("balanced_accuracy") is None:
            continue
        position += 1
        study["metrics"]["rank"] = position
        retry(client.log_metric, study["run_id"], "rank", position, now)
    scored = [s for s in ranked if "rank" in s["metrics"]]
    chart_run = None
    scatter = any("pareto_front_size" in s["metrics"] for s in ranked)  # some learner had several objectives
    if scored:
        with tempfile.TemporaryDirectory(prefix="automil-comparison-") as tmp:
            figures = {CHART: lambda: comparison_figure(dataset, ranked)}
            if scatter:
                figures[SCATTER] = lambda: pareto_figure(
                    trial_points(tracker, dataset, ranked),
                    f"{dataset}: every completed trial, accuracy against cost (ringed: each learner's front)")
            for name, draw in figures.items():
                draw().savefig(Path(tmp) / Path(name).name, dpi=100)
            for study in scored:
                for name in figures:
                    retry(client.log_artifact, study["run_id"], str(Path(tmp) / Path(name).name),
                          str(Path(name).parent))
        chart_run = scored[0]["run_id"]
    retry(client.set_experiment_tag, experiment_id, NOTE_TAG,
           leaderboard_markdown(dataset, experiment_id, ranked, chart_run, chosen, scatter))


def trial_points(tracker, dataset: str, ranked: list[dict]) -> dict[str, list[tuple[float, float]]]:
    """``(mean fit seconds, balanced accuracy)`` of every completed trial of the studies in ``ranked``,
    per learner."""
    learners = {study["run_id"]: study["learner"] for study in ranked}
    points = {}
    for trial in tracker.trials(dataset):
        metrics = trial["metrics"]
        if trial["parent"] in learners and trial["state"] == "COMPLETE" and \
                {"fit_seconds", "balanced_accuracy"} <= metrics.keys():
            points.setdefault(learners[trial["parent"]], []).append(
                (metrics["fit_seconds"], metrics["balanced_accuracy"]))
    return points
