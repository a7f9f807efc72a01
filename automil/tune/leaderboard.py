"""The leaderboard: one row per learner from its studies and final evaluation, and their ranking.

The keys of a row are documented in ``docs/tune.md``; ``automil tune`` prints the rows and
:mod:`automil.track` logs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from automil.tune.trial_states import trial_counts
from automil.evaluation import mean_std

if TYPE_CHECKING:
    from automil.tune.plan import Plan

__all__ = ["result_row", "row_status", "skipped_row", "rank"]


def result_row(plan: Plan, job) -> dict:
    """The leaderboard row of one learner (keys documented in docs/tune.md)."""
    options, spec, best = plan.options, job["spec"], job["best"]
    counts, finished = trial_counts(job["main"])
    row = {"dataset": plan.dataset, "learner": spec.name, "plugin": spec.plugin,
           "study": job["main"].study_name, "protocol": options.protocol,
           "metric": options.metric,
           "seed": options.seed, "folds": options.folds, **counts,
           "tuning_score": None if best is None else best.value,
           "best_trial": None if best is None else best.number,
           "best_params": None if best is None else best.user_attrs["estimator_params"]}
    for prefix in ("nested_", "repeated_", ""):
        for metric in ("accuracy", "balanced_accuracy"):
            row[f"{prefix}{metric}"] = row[f"{prefix}{metric}_std"] = None
    nested = job["nested"]
    if options.protocol == "nested" and nested and all(s is not None for s in nested):
        for metric in ("accuracy", "balanced_accuracy"):
            row[f"nested_{metric}"], row[f"nested_{metric}_std"] = mean_std(
                s[metric] for s in nested)
    repeats = [scores for scores in job["repeated"].values() if len(scores) == options.folds]
    row["repeats"] = len(repeats)
    for metric in ("accuracy", "balanced_accuracy"):
        # The spread is over repeats of the k-fold mean, as in the papers' 10 x 10-fold tables.
        row[f"repeated_{metric}"], row[f"repeated_{metric}_std"] = mean_std(
            np.mean([s[metric] for s in scores]) for scores in repeats)
    row["headline"] = "nested" if options.protocol == "nested" else "tuned (optimistic)"
    source = "nested_" if options.protocol == "nested" else "repeated_"
    for metric in ("accuracy", "balanced_accuracy"):
        row[metric], row[f"{metric}_std"] = row[f"{source}{metric}"], row[f"{source}{metric}_std"]
    fit_seconds = job["fit_seconds"] or [s for t in finished for s in t.user_attrs.get("fit_seconds", [])]
    row["fit_seconds"] = float(np.mean(fit_seconds)) if fit_seconds else None
    row["one_class"] = any(s is not None and s["one_class"] for s in nested) or any(
        s["one_class"] for scores in repeats for s in scores)
    stopped = sum(bool(t.user_attrs.get("interrupted")) for t in job["main"].get_trials(deepcopy=False))
    missing = [i for i, t in enumerate(job["outer_best"]) if t is None]
    errors = job["errors"] + [t.user_attrs["error"] for t in finished
                              if t.state.name == "FAIL" and not t.user_attrs.get("timed_out")]
    if missing and best is not None:
        errors.insert(0, f"no completed trial in outer split(s) {', '.join(map(str, missing))}: no nested "
                         "figure (raise --timeout or --n-trials)")
    one_class = sum(bool(t.user_attrs.get("one_class")) for t in finished)
    if best is None and one_class:
        errors.insert(0, f"{one_class} of {counts['trials']} trials predicted one class for every bag of a test "
                         "fold (never a result)")
    if best is None and not counts["trials"]:
        errors.insert(0, f"no trial finished within the --timeout budget ({stopped} stopped by it): raise "
                         "--timeout" if stopped else "no trial ran: raise --timeout")
    if best is None and not errors and counts["trials_pruned"]:
        reasons = [t.user_attrs["error"] for t in finished
                   if t.state.name == "PRUNED" and t.user_attrs.get("error")]
        errors.append(f"no trial completed: {counts['trials_pruned']} of {counts['trials']} pruned"
                      + (f" ({reasons[0]})" if reasons else "") + f", {counts['trials_timed_out']} timed out, "
                      f"{stopped} stopped by the --timeout budget")
    row["error"] = errors[0] if errors else None
    row["trials_stopped"] = stopped
    predictions = job["predictions"].get("nested" if options.protocol == "nested" else "repeat")
    if predictions and (options.protocol != "nested" or row["nested_accuracy"] is not None):
        from sklearn.metrics import confusion_matrix

        classes = np.unique(np.concatenate([y for y, _ in predictions]))
        y_true, y_pred = (np.concatenate(part) for part in zip(*predictions))
        row["classes"] = classes.tolist()
        row["confusion_matrix"] = confusion_matrix(y_true, y_pred, labels=classes).tolist()
    row["status"] = row_status(row, counts, best, job["errors"])
    return row


def row_status(row, counts, best, final_errors) -> str:
    """``ok``, ``partial``, or why there is no figure: ``T/O``, ``failed``, ``no result``, ``no trials``."""
    if row.get("accuracy") is not None:
        return "ok" if best is not None and not final_errors else "partial"
    if best is not None:
        return "partial"
    if not counts["trials"]:
        return "no trials"
    if counts["trials_timed_out"] == counts["trials"]:
        return "T/O"
    return "failed" if counts["trials_failed"] == counts["trials"] else "no result"


def skipped_row(dataset, spec, reason, options) -> dict:
    return {"dataset": dataset, "learner": spec.name, "plugin": spec.plugin, "status": "skipped",
            "error": reason, "protocol": options.protocol, "metric": options.metric, "trials": 0}


def rank(row):
    """Best headline balanced accuracy first; rows without a figure last, by name."""
    value = row.get(row.get("metric") or "balanced_accuracy")
    return (value is None, -(value or 0.0), row["learner"])
