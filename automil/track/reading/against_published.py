"""Each learner beside its published figure (``automil report --published``), one table per dataset.

A published MIL accuracy is usually tuned and reported on the same folds. automil's nested figure is not,
so the two are not comparable; the *paper-protocol* figure is: the best parameters of the study on all bags
re-evaluated with repeated cross-validation (the row's ``repeated_*`` keys), optimistic as the paper's are.
The difference is that figure minus the published one; a learner more than :data:`CLOSE` points below is
marked, so a page made from the table says why (a protocol difference, a variant) or the learner is fixed.
The trials column says how much tuning the parameters had. Nothing is recomputed: the numbers are the
parent-run metrics :mod:`automil.track` logged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from automil.learner import Published
from automil.track.reading.results_table import status_text
from automil.track.reading.stored_studies import StoredStudy, latest_per_learner

__all__ = ["Comparison", "compare", "render_comparisons", "CLOSE"]

CLOSE = 3.0  # points of accuracy: below the published figure by more, a row is marked
BELOW = "▼"


@dataclass(frozen=True)
class Figure:
    """A mean and sd in percent; sd ``None`` when one value is all there is."""

    mean: float
    std: float | None = None

    def shown(self) -> str:
        return f"{self.mean:.1f}" + ("" if self.std is None else f" ± {self.std:.1f}")


@dataclass(frozen=True)
class Comparison:
    """One learner on one dataset: its figures, the published one and the effort behind them."""

    learner: str
    status: str
    trials: int | None
    nested_accuracy: Figure | None
    nested_balanced_accuracy: Figure | None
    paper_accuracy: Figure | None  # repeated CV at the tuned parameters: the paper's protocol
    repeats: int | None
    published: float | None
    paper: str | None

    @property
    def difference(self) -> float | None:
        """Paper-protocol accuracy minus the published one, in points."""
        if self.paper_accuracy is None or self.published is None:
            return None
        return self.paper_accuracy.mean - self.published

    @property
    def below(self) -> bool:
        return self.difference is not None and self.difference < -CLOSE


def compare(studies: list[StoredStudy], published: dict[str, Published], dataset: str) -> list[Comparison]:
    """The rows of ``dataset``: every learner's latest study there (the procedure's row, which has no
    paper-protocol figure, included), by name."""
    rows = []
    for study in latest_per_learner([s for s in studies if s.dataset == dataset]):
        reference = published.get(study.learner)
        value = reference.accuracy.get(dataset) if reference else None
        rows.append(Comparison(
            learner=study.learner, status=study.status, trials=_count(study.metrics.get("trials")),
            nested_accuracy=_figure(study, "accuracy"),
            nested_balanced_accuracy=_figure(study, "balanced_accuracy"),
            paper_accuracy=_figure(study, "accuracy_repeated_cv"),
            repeats=_count(study.metrics.get("repeats")),
            published=value, paper=reference.paper if value is not None else None))
    return sorted(rows, key=lambda row: row.learner.lower())


def render_comparisons(studies: list[StoredStudy], published: dict[str, Published], datasets: list[str]) -> str:
    """Markdown: one table per dataset, then the papers the published column cites."""
    out = []
    papers = {}
    for dataset in datasets:
        rows = compare(studies, published, dataset)
        if not rows:
            continue
        out += [f"### {dataset}", "",
                "| learner | trials | nested ACC | nested BACC | paper-protocol ACC | repeats | published ACC | "
                "difference |",
                "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for row in rows:
            if row.paper is not None:
                papers.setdefault(row.paper, len(papers) + 1)
            cite = f" [{papers[row.paper]}]" if row.paper is not None else ""
            difference = "" if row.difference is None else f"{row.difference:+.1f}" + (f" {BELOW}" if row.below else "")
            out.append("| " + " | ".join([
                row.learner, _shown(row.trials), _or_status(row.nested_accuracy, row.status),
                _or_status(row.nested_balanced_accuracy, row.status), _shown(row.paper_accuracy),
                _shown(row.repeats), ("" if row.published is None else f"{row.published:.1f}") + cite,
                difference]) + " |")
        out.append("")
    out.append("ACC and BACC in %. nested: mean ± sd over the outer folds of nested cross-validation (the "
               "tuner never saw the test folds). paper-protocol: the tuned parameters re-evaluated with "
               "repeated cross-validation, mean ± sd over the repeats; tuned and reported on the same bags, "
               "so optimistic, as the published figures are. difference: paper-protocol minus published; "
               f"{BELOW}: more than {CLOSE:g} points below. trials: the trials of the study on all bags, whose "
               "best parameters the paper-protocol figure re-evaluates (each outer split is tuned in a "
               "study of its own).")
    out += [""] + [f"[{number}] {paper}" for paper, number in papers.items()]
    return "\n".join(out) + "\n"


def _figure(study: StoredStudy, metric: str) -> Figure | None:
    mean = study.metrics.get(metric)
    if mean is None or not math.isfinite(mean):
        return None
    std = study.metrics.get(f"{metric}_std")
    return Figure(100 * mean, None if std is None else 100 * std)


def _count(value: float | None) -> int | None:
    return None if value is None else int(value)


def _shown(value) -> str:
    if value is None:
        return ""
    return value.shown() if isinstance(value, Figure) else str(value)


def _or_status(figure: Figure | None, status: str) -> str:
    return figure.shown() if figure is not None else status_text(status)
