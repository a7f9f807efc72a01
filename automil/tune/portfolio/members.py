"""The portfolio automil ships (``portfolio.json``, built by ``bench/portfolio.py``) and the members a data
set gets: those of its regime, in the order they were chosen.

A regime is a range of the mean bag size: small bags (a few instances, the classic benchmarks) and large bags
(tens to thousands of instances, a few witnesses among them: pathology slides), where the learners that win
differ. A regime's members are learner + parameter pairs (Optuna's parameter names, as a study stores them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["Regime", "REGIMES", "Member", "regime_of", "members_for"]


@dataclass(frozen=True)
class Regime:
    """Data sets whose mean bag size lies in ``[min_mean_bag_size, max_mean_bag_size)``."""

    name: str
    min_mean_bag_size: float
    max_mean_bag_size: float


# The boundary: bags of 32 instances or more are where a witness is rare enough that a bag's mean hides it.
REGIMES = (Regime("small bags", 0.0, 32.0), Regime("large bags", 32.0, float("inf")))


@dataclass(frozen=True)
class Member:
    """One configuration of the portfolio: a learner and its parameters (a point of its search space)."""

    learner: str
    params: dict

    def to_dict(self) -> dict:
        return {"learner": self.learner, "params": self.params}


def regime_of(meta_features: dict) -> str:
    """The name of the regime of a data set, from its meta-features (``mean_bag_size``)."""
    size = float(meta_features["mean_bag_size"])
    return next(r.name for r in REGIMES if r.min_mean_bag_size <= size < r.max_mean_bag_size)


@cache
def _shipped() -> dict:
    return json.loads(resources.files(__package__).joinpath("portfolio.json").read_text())


def members_for(meta_features: dict, learners) -> tuple[Member, ...]:
    """The shipped portfolio's members for a data set of ``meta_features``, in order, restricted to the
    ``learners`` of the run."""
    regime = regime_of(meta_features)
    wanted = set(learners)
    for shipped in _shipped()["regimes"]:
        if shipped["name"] == regime:
            return tuple(Member(m["learner"], dict(m["params"])) for m in shipped["members"]
                         if m["learner"] in wanted)
    return ()
