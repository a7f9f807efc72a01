"""The one model a run hands the user, and the one rule that chooses it: on the scores of the folds the tuner
saw (never a row at chance by their uncertainty over their bags, an ensemble only when it beats its best
member by the uncertainty of its gain). The run applies it to its main studies' tuning scores; the row
``automil`` applies it in every outer split to that split's inner scores, so its figure measures the rule
that chose the shipped model."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from automil.evaluation.metrics import LABELS
from automil.records import PROCEDURE, LearnerResult, Status
from automil.tune.final.chance_rule import above, bag_bound, beats_members, row_chance

__all__ = ["Choice", "InnerScore", "choose", "best_inner", "admissible", "preference"]


@dataclass(frozen=True)
class Choice:
    """The model a run hands the user, decided once (:func:`choose`, in the final evaluation) so that the
    model fitted first is the one the run registers: ``learner`` names the chosen row, ``None`` when there
    is none, and ``reason`` then says why."""

    learner: str | None
    reason: str | None = None

    def row(self, rows: list[LearnerResult]) -> LearnerResult | None:
        """The chosen learner's row among ``rows`` (the final ones)."""
        return next((r for r in rows if r.learner == self.learner), None) if self.learner is not None else None


@dataclass(frozen=True)
class InnerScore:
    """A row's score on folds its tuner saw (``score``: the main study's tuning score, or an outer split's
    inner score), and for an ensemble the learners it combined there (``members``; ``None``: the row's own)
    and the lower bound of its gain over its best member alone (``gain_bound``)."""

    row: LearnerResult
    score: float | None
    members: list[str] | None = None
    gain_bound: float | None = None

    def clears_chance(self, metric: str, counts) -> bool:
        """Whether the score less twice its standard error over the bags it scored (``counts`` of each
        class) is above chance."""
        return above(bag_bound(self.score, metric, counts), row_chance(self.row))


def best_inner(scored: list[InnerScore], scores: dict[str, float | None], metric: str,
               counts) -> InnerScore | None:
    """The rule of every choice: among ``scored`` (rows :func:`admissible`), those above chance by their
    score's uncertainty over the bags it scored (``counts`` of each class), an ensemble only when its score
    beats its best member's among ``scores`` (every row's on the same folds) and its gain bound is above 0;
    the best score wins, ties to the cheaper row, then by name. ``None``: none passes."""
    passed = [s for s in scored if s.clears_chance(metric, counts)
              and beats_members(s.row, s.score, scores, s.members, s.gain_bound)]
    return min(passed, key=lambda s: preference(s.row, s.score), default=None)


def choose(rows: list[LearnerResult], counts) -> Choice:
    """The chosen learner: :func:`best_inner` on the rows' tuning scores (their main studies' best, the
    ensemble's cross-validated counterpart), ``counts`` the bags of each class those scores cover
    (:meth:`~automil.tune.studies.plan.Plan.tuning_bags`); ``Choice(None, reason)`` when no row passes.
    Under the hold-out protocol this is the choice the row ``automil`` makes in its one outer split. The
    headline figures are not looked at: the row ``automil`` measures this rule on outer folds its choices
    never saw, and choosing on them would leave it measuring another."""
    candidates = [r for r in rows if admissible(r)]
    if not candidates:
        return Choice(None, "no learner has a figure to choose a model by")
    metric = candidates[0].metric or "balanced_accuracy"
    scored = [InnerScore(r, r.tuning.score, gain_bound=r.tuning.gain_bound) for r in candidates]
    chosen = best_inner(scored, {r.learner: r.tuning.score for r in rows}, metric, counts)
    if chosen is not None:
        return Choice(chosen.row.learner)
    if any(s.clears_chance(metric, counts) for s in scored):
        return Choice(None, "no learner scored above chance, and the ensemble did not beat its best member: "
                            "no model is registered")
    tuned = [s for s in scored if s.score is not None]
    if not tuned:
        return Choice(None, "no learner has a tuning score to choose a model by")
    best = min(tuned, key=lambda s: preference(s.row, s.score))
    name = LABELS.get(metric, metric)
    return Choice(None, f"no learner scored above chance on its tuning folds ({name} {row_chance(best.row):.2f}; "
                        f"the best, {best.row.learner}, {best.score:.2f} with its lower bound at "
                        f"{bag_bound(best.score, metric, counts):.2f} over {int(np.sum(counts))} bags): "
                        "no model is registered")


def admissible(row: LearnerResult) -> bool:
    """A row a choice may consider: status ``ok``, a headline figure, not one class (its out-of-fold predictions
    give the bags more than one)."""
    return row.status == Status.OK and not row.headline.one_class and row.metric_value() is not None \
        and row.learner != PROCEDURE


def preference(row: LearnerResult, value: float) -> tuple:
    """The order of a choice among rows scored ``value``: highest first, then cheaper, then by name."""
    return -value, row.costs.fit_seconds is None, row.costs.fit_seconds or 0.0, row.learner
