"""How a run scores the leaderboard: the protocol of ``--protocol``, and what its headline figure is called."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Protocol"]


class Protocol(StrEnum):
    """How a run scores the leaderboard (``--protocol``)."""

    AUTO = "auto"  # nested below a size (automil.tune.options.HOLDOUT_CELLS), holdout from there
    NESTED = "nested"  # headline figures from outer folds the tuner never saw
    HOLDOUT = "holdout"  # one outer fold held out, tuned on the others: the headline from the held-out bags
    TUNED = "tuned"  # tuned and scored on the same folds: the papers' protocol, optimistic

    @property
    def held_out(self) -> bool:
        """Whether the headline comes from outer refits on bags the tuner never saw (nested or hold-out)."""
        return self in (Protocol.NESTED, Protocol.HOLDOUT)

    @property
    def headline(self) -> str:
        """What the leaderboard calls a headline figure of this protocol."""
        return {Protocol.NESTED: "nested", Protocol.HOLDOUT: "hold-out"}.get(self, "tuned (optimistic)")
