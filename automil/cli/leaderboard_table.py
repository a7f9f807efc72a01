"""The leaderboard's table and the footnotes on its columns: one screen by default (the learner, the headline
metric with its spread, AUC, fit seconds, trials, status: within ``SCREEN_WIDTH`` columns), every column under
``--verbose`` (each headline metric, the repeated CV, tuning, budget, instance columns, the best parameters).

A row without a figure shows its short status where its headline figures would be; why it has none is said
once, below the table (:mod:`automil.cli.leaderboard_notes`), so no reason widens a column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from automil.cli.common import print_table, print_wrapped
from automil.endpoints import LABELS, LOWER_IS_BETTER, TASK_METRICS
from automil.records import OTHER_METRICS, PROCEDURE, Figure, InstanceFigures, LearnerResult, Status
from automil.records.protocol import Protocol

__all__ = ["Column", "columns", "print_rows", "measured"]

# What the survival and regression columns mean, said once under the table.
_MEANING = {"concordance": "Harrell's concordance of the risks (0.5 chance)",
            "uno_concordance": "Uno's concordance, censoring-weighted (0.5 chance)",
            "integrated_brier": "integrated Brier score of the survival curves (lower is better)",
            "r2": "R^2 of the values (0 chance)", "spearman": "Spearman's rank correlation (0 chance)",
            "mae": "mean absolute error (lower is better)", "rmse": "root mean squared error (lower is better)"}
# What a survival or regression figure's standard error is taken over.
_COUNTED = {"survival": "events and censored bags", "regression": "bags"}


@dataclass(frozen=True)
class Column:
    """A column of the table: its header, the cell of a row with a figure, and what a row without one shows
    there: its short status (``headline``), a blank (``figure``), or the cell all the same."""

    header: str
    cell: Callable[[LearnerResult], object]
    headline: bool = False
    figure: bool = False

    def text(self, row: LearnerResult) -> str:
        if _has_figure(row) or not (self.headline or self.figure):
            return str(self.cell(row))
        return str(row.status) if self.headline else ""


def print_rows(rows: list[LearnerResult], verbose: bool):
    """The table of ``rows`` and the footnotes on what it shows."""
    shown = columns(rows, verbose)
    print_table([c.header for c in shown], [[c.text(row) for c in shown] for row in rows])
    _print_footnotes(rows, verbose)


def columns(rows: list[LearnerResult], verbose: bool) -> list[Column]:
    """The columns of the table: a Pareto front's whenever the run tuned for one (it was asked for), the
    others of the wide table only under ``verbose``."""
    first = rows[0]
    head = {Protocol.NESTED: "nested", Protocol.HOLDOUT: "hold-out"}.get(Protocol(first.protocol), "tuned*")
    metric = first.metric or "balanced_accuracy"
    label = LABELS.get(metric, "ACC")
    fronts = _front_columns(rows, label)
    status = Column("status", lambda row: row.status or "-")
    if first.task != "classification":
        return _task_columns(first, head, verbose, fronts, status)
    if not verbose:
        beside = "balanced_accuracy" if metric == "roc_auc" else "roc_auc"  # AUC, or BACC beside an AUC metric
        return [Column("learner", _name),
                *(Column(f"{LABELS[m]} ({head})", _headline(m), headline=True) for m in (metric, beside)),
                Column("fit s", _fit_seconds, figure=True), Column("trials", lambda row: _blank(row.counts.trials)),
                *fronts, status]
    instance = [Column("inst AUC", lambda row: measured(row.instance, "instance_auc"), figure=True),
                Column("wit prec", lambda row: measured(row.instance, "witness_precision"), figure=True)]
    return [Column("learner", _name),
            Column(f"ACC ({head})", _headline("accuracy"), headline=True),
            Column(f"BACC ({head})", _headline("balanced_accuracy"), headline=True),
            Column(f"AUC ({head})", _headline("roc_auc"), figure=True),
            Column("repeated-CV ACC", lambda row: measured(row.repeated, "accuracy"), figure=True),
            Column("repeated-CV BACC", lambda row: measured(row.repeated, "balanced_accuracy"), figure=True),
            Column("reps", lambda row: _blank(row.repeated.repeats), figure=True),
            Column(f"tuning {label}*", lambda row: _percent(row.tuning.score), figure=True),
            Column("fit s", _fit_seconds, figure=True),
            Column("budget s", _budget_seconds),
            Column("trials", lambda row: _blank(row.counts.trials)),
            Column("T/O", lambda row: "" if row.status == Status.SKIPPED else _blank(row.counts.timed_out)),
            *fronts, *(instance if any(row.instance is not None for row in rows) else ()), status,
            Column("best parameters", _parameters, figure=True)]


def _task_columns(first: LearnerResult, head: str, verbose: bool, fronts: list[Column],
                  status: Column) -> list[Column]:
    """The columns of a survival or regression table: every metric of the task as the headline gives it (the
    tuned one first), then as the classification table goes on."""
    metric = first.metric
    shown = [metric, *(m for m in TASK_METRICS[first.task] if m != metric)]
    figures = [Column(f"{LABELS[m]} ({head})", _headline(m), headline=m == metric, figure=m != metric) for m in shown]
    if not verbose:
        return [Column("learner", _name), *figures, Column("fit s", _fit_seconds, figure=True),
                Column("trials", lambda row: _blank(row.counts.trials)), *fronts, status]
    return [Column("learner", _name), *figures,
            Column(f"repeated-CV {LABELS[metric]}", lambda row: measured(row.repeated, metric), figure=True),
            Column("reps", lambda row: _blank(row.repeated.repeats), figure=True),
            Column(f"tuning {LABELS[metric]}*", lambda row: _shown(metric, row.tuning.score), figure=True),
            Column("fit s", _fit_seconds, figure=True), Column("budget s", _budget_seconds),
            Column("trials", lambda row: _blank(row.counts.trials)),
            Column("T/O", lambda row: "" if row.status == Status.SKIPPED else _blank(row.counts.timed_out)),
            *fronts, status, Column("best parameters", _parameters, figure=True)]


def _print_footnotes(rows: list[LearnerResult], verbose: bool):
    """What the columns shown mean: the protocol behind the headline, the marks, the procedure's row."""
    first = rows[0]
    metric = LABELS.get(first.metric or "balanced_accuracy", "ACC")
    protocol = Protocol(first.protocol)
    objectives = _objectives(rows)
    lines = [] if not objectives else [
        f"front: trials on the Pareto front of {' against '.join(objectives)} (tuning folds); fast: its fastest "
        f"point within 1 point of its best {metric}."]
    lines.append("")
    cv = f"{first.dataset}: {first.folds}-fold CV over bags, seed {first.seed}"
    if protocol == Protocol.HOLDOUT:
        how = ("a bootstrap for ACC and BACC, Hanley-McNeil's standard error for AUC" if first.task == "classification"
               else f"the normal interval of its standard error over the {_COUNTED[first.task]}")
        lines.append(f"{first.dataset}: hold-out: one of {first.folds} folds of bags held out, tuned by "
                     f"{first.folds - 1}-fold CV on the others; the hold-out figure's 95% interval is over its bags "
                     f"(`interval` in --json: {how}); screened: the learner's defaults on a share of the bags only.")
    elif protocol == Protocol.NESTED:
        cv += "; nested: mean +- sd over the outer folds, each scored by a refit tuned on the other folds"
    if verbose or not protocol.held_out:
        repeats = max(row.repeated.repeats or 0 for row in rows)
        cv += "; repeated CV = " + (
            f"best parameters re-evaluated over up to {repeats} repeat{'s' if repeats > 1 else ''} (mean +- sd "
            "over the repeats in `reps`; sd '-': one repeat, not measured)" if repeats else
            "none: the budget ended before a repeat (raise --timeout)")
    if protocol != Protocol.HOLDOUT or verbose:
        lines.append(cv + ".")
    if verbose or objectives or not protocol.held_out:
        lines.append("* optimistic: scored on the folds the parameters were tuned on." + (
            "" if protocol.held_out else " Use --protocol nested for scores from folds the tuner never saw."))
    if any(row.headline.one_class for row in rows) and first.task == "classification":
        lines.append("one class: the refits behind the headline predicted one class for every bag they scored; "
                     "the figure is flagged, never a choice.")
    elif any(row.headline.one_class for row in rows):
        lines.append("constant: the refits behind the headline predicted the same value for every bag they scored; "
                     "the figure is flagged, never a choice.")
    if first.task != "classification":
        lines.append(f"{'; '.join(f'{LABELS[m]}: {_MEANING[m]}' for m in TASK_METRICS[first.task])}.")
    if any(row.learner == PROCEDURE for row in rows):
        lines.append(f"{PROCEDURE}: the procedure itself; each outer split takes the row best on its inner folds "
                     "(as the final choice does on all bags) and is scored on its outer fold.")
    if verbose and any(row.instance is not None for row in rows):
        lines.append("inst AUC: AUC of the instance scores against the instance labels; wit prec: share of positive "
                     "bags whose witness is a positive instance (test bags of the nested refits; '-': no such "
                     "output).")
    print_wrapped("\n".join(lines))


def _front_columns(rows: list[LearnerResult], label: str) -> list[Column]:
    """A Pareto front's size and its cheapest point (by the cost objective) within 1 point of its best metric."""
    objectives = _objectives(rows)
    if not any(row.tuning.pareto_front is not None for row in rows):
        return []
    cost = next((name for name in objectives if name.endswith("_seconds")), None)
    return [Column("front", lambda row: _front(row, cost)[0], figure=True),
            Column(f"fast: {(cost or 'seconds').replace('_seconds', ' s')}", lambda row: _front(row, cost)[1],
                   figure=True),
            Column(f"fast: {label}*", lambda row: _front(row, cost)[2], figure=True)]


def _front(row: LearnerResult, cost: str | None) -> tuple:
    from automil.evaluation.pareto import cheapest_near_best

    front = row.tuning.pareto_front
    if not front or cost is None:
        return ("-" if front is None else len(front), "-", "-")
    metric = row.metric
    fast = front[cheapest_near_best([p.values[metric] for p in front], [p.values[cost] for p in front])].values
    return (len(front), f"{fast[cost]:.3g}", _shown(metric, fast[metric]))


def _objectives(rows: list[LearnerResult]) -> list[str]:
    """The objectives of the fronts, in their order."""
    return next((list(row.tuning.pareto_front[0].values) for row in rows if row.tuning.pareto_front), [])


def _has_figure(row: LearnerResult) -> bool:
    return row.status is None or row.status.has_figure


def _name(row: LearnerResult) -> str:
    """The learner, marked: a one-class headline is never chosen, so its flag is the one mark it needs."""
    if not _has_figure(row):
        return row.learner
    return (f"{row.learner} ({'one class' if row.task == 'classification' else 'constant'})"
            if row.headline.one_class else
            f"{row.learner} (chosen)" if row.model.selected else row.learner)


def _headline(metric: str) -> Callable[[LearnerResult], str]:
    return lambda row: measured(row.headline, metric)


def measured(figures: Figure | InstanceFigures | None, name: str) -> str:
    """The figure ``name`` of ``figures`` over folds or repeats: mean +- sd, the sd ``-`` where it rests on one
    (not measured); a classification figure in percent, a survival or regression one as it is."""
    mean = None if figures is None else getattr(figures, name)
    if mean is None:
        return "-"
    std = getattr(figures, f"{name}_std")
    return f"{_shown(name, mean)} +- " + ("-" if std is None else _shown(name, std))


def _shown(name: str, value: float | None) -> str:
    """A figure of the metric ``name``: a share in percent (classification, instance figures), a survival or
    regression figure to three decimals (a concordance 0.712), an error to three significant digits (in the
    target's units)."""
    if value is None:
        return "-"
    if name in LOWER_IS_BETTER:
        return f"{value:.3g}"
    return f"{value:.3f}" if name in OTHER_METRICS else f"{100 * value:.1f}"


def _fit_seconds(row: LearnerResult) -> str:
    return "-" if row.costs.fit_seconds is None else f"{row.costs.fit_seconds:.2f}"


def _budget_seconds(row: LearnerResult) -> str:
    """The seconds of the run's budget a row's learner used, whole ('' for a row that ran nothing here)."""
    return "" if row.costs.budget_seconds is None else f"{row.costs.budget_seconds:.0f}"


def _parameters(row: LearnerResult) -> str:
    """The ensemble's members, the procedure's choice per outer split, or a learner's best parameters."""
    if row.members:
        return "members: " + " ".join(f"{m.learner}={m.weight:.2f}" for m in row.members)
    if row.choices:
        return "per outer split: " + " ".join(choice or "-" for choice in row.choices)
    params = row.tuning.best_params or {}
    return " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def _percent(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _blank(value):
    return "-" if value is None else value
