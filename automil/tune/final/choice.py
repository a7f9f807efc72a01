"""The one model a run hands the user: the rule that chooses it among the leaderboard's rows (never a row
at chance, an ensemble only when it beats its best member by the uncertainty of its gain)."""

from __future__ import annotations

from dataclasses import dataclass

from automil.evaluation.metrics import LABELS
from automil.records import PROCEDURE, LearnerResult, Status
from automil.tune.final.chance_rule import above, beats_members, headline_bound, row_chance

__all__ = ["Choice", "choose", "admissible", "preference"]


@dataclass(frozen=True)
class Choice:
    """The model a run hands the user, decided once (:func:`choose`, in the final evaluation, on the
    headline rows) so that the model fitted first is the one the run registers: ``learner`` names the
    chosen row, ``None`` when there is none, and ``reason`` then says why."""

    learner: str | None
    reason: str | None = None

    def row(self, rows: list[LearnerResult]) -> LearnerResult | None:
        """The chosen learner's row among ``rows`` (the final ones)."""
        return next((r for r in rows if r.learner == self.learner), None) if self.learner is not None else None


def choose(rows: list[LearnerResult]) -> Choice:
    """The chosen learner, ``Choice(None, reason)`` when no row has a usable figure above chance.

    Candidates have status ``ok``, a headline figure (nested CV under the nested protocol) and never
    predicted one class for every bag of a headline fold; of them, a row is chosen only when its figure
    is above chance by its own uncertainty (:func:`~automil.tune.final.chance_rule.headline_bound`), and
    the ensemble only when its tuning score beats its best member's and its gain over that member alone
    passes twice its standard error (its cost buys nothing otherwise). The best headline value of the run's
    metric wins; ties go to the cheaper learner (lower mean fit seconds), then to the name.
    """
    candidates = [r for r in rows if admissible(r)]
    if not candidates:
        return Choice(None, "no learner has a figure to choose a model by")
    clear = [r for r in candidates if above(headline_bound(r), row_chance(r))]
    tuning = {r.learner: r.tuning.score for r in rows}
    chosen = [r for r in clear if beats_members(r, r.tuning.score, tuning, gain_bound=r.tuning.gain_bound)]
    if chosen:
        return Choice(min(chosen, key=lambda r: preference(r, r.metric_value())).learner)
    if clear:
        return Choice(None, "no learner scored above chance, and the ensemble did not beat its best member: "
                            "no model is registered")
    best = min(candidates, key=lambda r: preference(r, r.metric_value()))
    name = LABELS.get(best.metric, best.metric)
    return Choice(None, f"no learner scored above chance ({name} {row_chance(best):.2f}; the best, {best.learner}, "
                        f"{best.metric_value():.2f} with its lower bound at {headline_bound(best):.2f}): "
                        "no model is registered")



def admissible(row: LearnerResult) -> bool:
    """A row :func:`choose` may consider: status ``ok``, a headline figure, no fold predicted as one class."""
    return row.status == Status.OK and not row.headline.one_class and row.metric_value() is not None \
        and row.learner != PROCEDURE


def preference(row: LearnerResult, value: float) -> tuple:
    """The order of :func:`choose` for a row scored ``value``: highest first, then cheaper, then by name."""
    return -value, row.costs.fit_seconds is None, row.costs.fit_seconds or 0.0, row.learner
