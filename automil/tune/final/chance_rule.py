"""The rule every choice of a run follows, so that it never ships chance: a row is chosen only when its score
is above chance by its own uncertainty (``docs/protocol.md``, "The chosen model"), an ensemble only when it beats
its best member, and that member alone calibrated as the ensemble is by the uncertainty of the gain; and what
a choice that found nothing scores (chance itself)."""

from __future__ import annotations

import numpy as np

from automil.endpoints import TASK_METRICS
from automil.evaluation.chance import CHANCE_SIGMAS, chance_level, score_stderr
from automil.records import LearnerResult, OuterSplit

__all__ = ["row_chance", "bag_bound", "above", "best_member", "beats_members", "chance_split"]


def row_chance(row: LearnerResult, metric: str | None = None) -> float | None:
    """What ``metric`` (the row's own by default) scores by chance on the bags the row's headline scored
    (:func:`~automil.evaluation.chance.chance_level`, from the classes its confusion matrix counts);
    ``None`` without out-of-fold predictions. Survival and regression metrics have theirs whatever the bags
    (a concordance 0.5, R^2 and Spearman's rho 0), once the row has a figure; ``None`` for those without one
    (the integrated Brier score, MAE, RMSE)."""
    if row.task != "classification":
        metric = metric or row.metric
        chance = _chance(metric)
        return None if row.metric_value() is None else chance
    if row.headline.confusion_matrix is None:
        return None
    counts = np.asarray(row.headline.confusion_matrix).sum(axis=1)
    return chance_level(metric or row.metric or "balanced_accuracy", np.repeat(np.arange(len(counts)), counts))


def _chance(metric: str) -> float | None:
    """The chance level of a survival or regression ``metric``, ``None`` for one without."""
    try:
        return chance_level(metric, None)
    except ValueError:
        return None


def bag_bound(score: float | None, metric: str, counts) -> float | None:
    """``score`` less ``CHANCE_SIGMAS`` of its standard errors over the bags it scored (``counts`` of each
    class, :func:`~automil.evaluation.chance.score_stderr`): what an inner score can claim, whatever the
    spread of its few folds."""
    return None if score is None else score - CHANCE_SIGMAS * score_stderr(metric, score, counts)


def above(bound: float | None, chance: float | None) -> bool:
    """The rule of every choice: a score is chosen only when its lower bound is above chance (no chance
    level: the row has no predictions to tell it by, and passes)."""
    return bound is not None and (chance is None or bound > chance)


def best_member(members: list[str], scores: dict[str, float | None]) -> str | None:
    """The member of an ensemble with the best inner score among ``scores`` (``None``: none has one)."""
    scored = [n for n in members if scores.get(n) is not None]
    return max(scored, key=lambda n: scores[n], default=None)


def beats_members(row: LearnerResult, score: float | None, scores: dict[str, float | None],
                  members: list[str] | None = None, gain_bound: float | None = None) -> bool:
    """Whether a row that is an ensemble (``members``, else its row's) beats its best member on the inner
    estimate (``score`` against the members' ``scores``) and its gain over that member alone, calibrated
    and cross-validated as the ensemble is, passes twice its standard error (``gain_bound`` above 0;
    ``None``: not measured); any other row does."""
    members = members if members is not None else [m.learner for m in row.members or ()]
    if not members:
        return True
    best = best_member(members, scores)
    return score is not None and (best is None or score > scores[best]) and (gain_bound is None or gain_bound > 0)


def chance_split(rows: list[LearnerResult]) -> OuterSplit | None:
    """An outer split where the procedure ships nothing, scored as chance: every metric's chance level on
    the bags the ``rows``' predictions scored (a prediction of the majority class; for survival and regression
    a constant prediction, and no figure of a metric without a chance level); ``None`` without them."""
    row = next((r for r in rows if row_chance(r) is not None), None)
    if row is None:
        return None
    return OuterSplit(**{m: row_chance(row, m) for m in TASK_METRICS[row.task]})
