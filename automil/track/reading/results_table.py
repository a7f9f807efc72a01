"""The paper-style results table (the pdMISVM paper's Table I) from the studies in a tracking store.

Datasets are columns, learners rows (first the row ``automil``, the procedure's own nested figure: a
learner chosen in each outer split on its inner folds); each cell holds the headline ACC or BACC of a
learner-dataset study as mean +- sd in percent, ``T/O`` when every trial timed out, and the best of each
column in bold; with the cost column, also the mean seconds of one fit (always there when a study was tuned
for accuracy against cost, ``--objective ... --objective fit_seconds``). The numbers are the parent-run metrics
:mod:`automil.track` logged; nothing is recomputed.
"""

from __future__ import annotations

import csv
import html
import io
import math
from dataclasses import dataclass, field

from automil.records import PROCEDURE
from automil.track.reading.stored_studies import StoredStudy, latest_per_learner

__all__ = ["Table", "build_table", "render", "FORMATS"]

FORMATS = ("markdown", "html", "csv")
METRICS = (("accuracy", "ACC"), ("balanced_accuracy", "BACC"))
# how well a learner finds the positive instances, on data with instance labels (columns only when logged)
INSTANCE_METRICS = (("instance_auc", "inst AUC"), ("witness_precision", "wit prec"))
COST = ("fit_seconds", "fit s")  # mean seconds per fit: the cost an --objective can trade accuracy for
OPTIMISTIC = "†"  # marks figures from the tuned protocol (tuned and reported on the same folds)


@dataclass
class Cell:
    """One learner on one dataset for one column: a mean and sd (fractions, or seconds for the cost), or a
    status text."""

    mean: float | None = None
    std: float | None = None
    text: str = ""  # "T/O", "failed", ... when there is no figure
    optimistic: bool = False
    best: bool = False
    seconds: bool = False

    def shown(self, markup: str = "") -> str:
        if self.mean is None:
            return self.text
        if self.seconds:
            return _seconds(self.mean)
        value = f"{100 * self.mean:.1f}"
        if self.std is not None:
            value += f" ± {100 * self.std:.1f}"
        if self.optimistic:
            value += OPTIMISTIC
        if self.best and markup == "markdown":
            return f"**{value}**"
        return value


@dataclass
class Table:
    """Rows are learners, columns ``(dataset, metric)`` for the ``metrics`` (key, label) pairs."""

    datasets: list[str]
    learners: list[str]
    cells: dict = field(default_factory=dict)  # (learner, dataset, metric) -> Cell
    metrics: tuple = METRICS

    def cell(self, learner, dataset, metric) -> Cell:
        return self.cells.get((learner, dataset, metric), Cell())

    @property
    def any_optimistic(self) -> bool:
        return any(c.optimistic for c in self.cells.values())


def build_table(studies: list[StoredStudy], datasets=None, cost: bool = False) -> Table:
    """The table from the studies of :meth:`automil.track.Tracker.studies`.

    A learner-dataset pair logged by several studies shows the most recently finished one. ``datasets``
    fixes the columns and their order (default: every dataset found, sorted). ``cost`` adds the fit
    seconds of each study, as does any study tuned for several objectives (it logged its front's size).
    The instance figures (``inst AUC``, ``wit prec``) are columns when some study logged them; a study
    without them has an empty cell there.
    """
    latest = latest_per_learner(studies)
    columns = list(datasets) if datasets else sorted({study.dataset for study in latest})
    kept = [study for study in latest if study.dataset in columns]
    cost = cost or any("pareto_front_size" in study.metrics for study in kept)
    instance = tuple(m for m in INSTANCE_METRICS if any(m[0] in study.metrics for study in kept))
    # the procedure's row (a learner chosen per outer split, automil's own nested figure) first
    learners = sorted({study.learner for study in kept}, key=lambda name: (name != PROCEDURE, name.lower()))
    table = Table(datasets=columns, learners=learners,
                  metrics=METRICS + instance + ((COST,) if cost else ()))
    for study in kept:
        learner, dataset = study.learner, study.dataset
        for metric, _ in METRICS:
            mean = study.metrics.get(metric)
            if mean is not None and math.isfinite(mean):
                table.cells[learner, dataset, metric] = Cell(mean, study.metrics.get(f"{metric}_std"),
                                                             optimistic=study.optimistic)
            else:
                table.cells[learner, dataset, metric] = Cell(text=status_text(study.status))
        for metric, _ in instance:
            if study.metrics.get(metric) is not None:
                table.cells[learner, dataset, metric] = Cell(study.metrics[metric], study.metrics.get(f"{metric}_std"))
        if cost:
            seconds = study.metrics.get(COST[0])
            table.cells[learner, dataset, COST[0]] = Cell(seconds, seconds=True) if seconds is not None else Cell()
    for dataset in columns:
        for metric, _ in METRICS + instance:
            figures = [table.cell(learner, dataset, metric) for learner in table.learners]
            shown = [round(100 * c.mean, 1) for c in figures if c.mean is not None]
            for c in figures:  # ties as the reader sees them (one decimal) are all bold
                c.best = c.mean is not None and round(100 * c.mean, 1) == max(shown)
    return table


def _seconds(value: float) -> str:
    """Seconds with two significant digits, at least one decimal below 10 s (0.013, 2.5, 140)."""
    return f"{value:.2g}" if value < 10 else f"{value:.0f}"


def status_text(status: str) -> str:
    return {"": "running", "ok": "-", "partial": "-"}.get(status, status)


def render(table: Table, format: str = "markdown") -> str:
    """The table as ``markdown``, ``html`` or ``csv`` text.

    CSV keeps the unrounded percentages and seconds (mean and sd in separate columns) and has no bold; the best
    per column is what the other two formats show in bold.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown report format {format!r}; choose one of {', '.join(FORMATS)}")
    return {"markdown": _markdown, "html": _html, "csv": _csv}[format](table)


def legend(table: Table) -> str:
    text = ("ACC and BACC in %, mean ± sd of each study's headline evaluation (nested cross-validation"
            + (f" unless marked {OPTIMISTIC}" if table.any_optimistic else "")
            + "); bold: best of each column; T/O: every trial timed out.")
    if any(m in table.metrics for m in INSTANCE_METRICS):
        text += (" inst AUC: AUC of the instance scores against the instance labels; wit prec: share of positive "
                 "bags whose witness is a positive instance (both over the test bags of the nested refits).")
    if COST in table.metrics:
        text += " fit s: mean seconds of one fit."
    if table.any_optimistic:
        text += f" {OPTIMISTIC} tuned and reported on the same folds (optimistic)."
    return text


def _markdown(table: Table) -> str:
    header = ["learner"] + [f"{d} {label}" for d in table.datasets for _, label in table.metrics]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" + "---:|" * (len(header) - 1)]
    for learner in table.learners:
        cells = [table.cell(learner, d, m).shown("markdown") for d in table.datasets for m, _ in table.metrics]
        lines.append("| " + " | ".join([learner] + cells) + " |")
    return "\n".join(lines) + "\n\n" + legend(table) + "\n"


def _html(table: Table) -> str:
    out = ["<table>", "<thead>", "<tr><th rowspan=\"2\">learner</th>" + "".join(
        f"<th colspan=\"{len(table.metrics)}\">{html.escape(d)}</th>" for d in table.datasets) + "</tr>",
        "<tr>" + "".join(f"<th>{label}</th>" for _ in table.datasets for _, label in table.metrics) + "</tr>",
        "</thead>", "<tbody>"]
    for learner in table.learners:
        cells = []
        for dataset in table.datasets:
            for metric, _ in table.metrics:
                cell = table.cell(learner, dataset, metric)
                text = html.escape(cell.shown())
                cells.append(f"<td><b>{text}</b></td>" if cell.best else f"<td>{text}</td>")
        out.append(f"<tr><th>{html.escape(learner)}</th>{''.join(cells)}</tr>")
    out += ["</tbody>", f"<caption>{html.escape(legend(table))}</caption>", "</table>"]
    return "\n".join(out) + "\n"


def _csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["learner"] + [f"{d} {label} {part}" for d in table.datasets for _, label in table.metrics
                                   for part in ("mean", "sd")])
    for learner in table.learners:
        row = [learner]
        for dataset in table.datasets:
            for metric, _ in table.metrics:
                cell = table.cell(learner, dataset, metric)
                scale = 1 if cell.seconds else 100  # seconds stay seconds, fractions become %
                if cell.mean is None:
                    row += [cell.text, ""]
                else:
                    row += [f"{scale * cell.mean:.4f}", "" if cell.std is None else f"{scale * cell.std:.4f}"]
        writer.writerow(row)
    return buffer.getvalue()
