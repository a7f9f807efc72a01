"""The portfolio automil ships (``portfolio.json``, built by ``experiments/portfolio.py``) and the members a data
set gets: those of its regime, in the order they were chosen.

A regime is a range of the mean bag size: small bags (a few instances, the classic benchmarks) and large bags
(tens to thousands of instances, a few witnesses among them: pathology slides), where the learners that win
differ; large bags in groups of several (a patient's slides) are a regime of their own, since what a
patient's slides share can teach a learner the patients instead of the witnesses. A regime's members are
learner + parameter pairs (Optuna's parameter names, as a study stores them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

__all__ = ["Regime", "REGIMES", "Member", "grouped", "regime_of", "members_for", "read_portfolio", "SHIPPED"]


@dataclass(frozen=True)
class Regime:
    """Data sets whose mean bag size lies in ``[min_mean_bag_size, max_mean_bag_size)``, in groups of several
    bags (``grouped``) or not."""

    name: str
    min_mean_bag_size: float
    max_mean_bag_size: float
    grouped: bool = False


# The boundary: bags of 32 instances or more are where a witness is rare enough that a bag's mean hides it.
REGIMES = (Regime("small bags", 0.0, 32.0), Regime("large bags", 32.0, float("inf")),
           Regime("slides by patient", 32.0, float("inf"), grouped=True))


@dataclass(frozen=True)
class Member:
    """One configuration of the portfolio: a learner and its parameters (a point of its search space)."""

    learner: str
    params: dict

    def to_dict(self) -> dict:
        return {"learner": self.learner, "params": self.params}


def grouped(bags) -> bool:
    """Whether some group holds several of ``bags`` (a patient's slides): what ``regime_of`` reads as
    ``grouped`` beside the meta-features."""
    return bags.groups is not None and len(set(bags.groups)) < bags.n_bags


def regime_of(meta_features: dict) -> str:
    """The name of the regime of a data set, from its meta-features (``mean_bag_size``) and ``grouped`` (absent:
    not grouped); grouped bags of a size that has no grouped regime are in that size's regime."""
    size = float(meta_features["mean_bag_size"])
    sized = [r for r in REGIMES if r.min_mean_bag_size <= size < r.max_mean_bag_size]
    return next((r.name for r in sized if r.grouped == bool(meta_features.get("grouped", False))), sized[0].name)


SHIPPED = "shipped"  # the portfolio automil ships, next to this module


@cache
def read_portfolio(source: str = SHIPPED) -> dict[str, tuple[Member, ...]]:
    """The members of every regime of a portfolio file (``SHIPPED``: automil's own), by regime name.

    Raises
    ------
    ValueError
        When the file is not a portfolio: not JSON, no ``regimes``, a regime without a known name, or a
        member without a learner and its parameters; the message names the file and the place.
    """
    if source == SHIPPED:
        where, text = "automil's portfolio.json", resources.files(__package__).joinpath("portfolio.json").read_text()
    else:
        where, text = source, Path(source).read_text()
    try:
        regimes = json.loads(text)["regimes"]
        return {regime["name"]: tuple(_member(m) for m in regime["members"]) for regime in regimes
                if _known(regime["name"])}
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ValueError(f"{where} is not a portfolio (a JSON object whose 'regimes' each have a 'name' and "
                         f"'members' of 'learner' and 'params'): {type(error).__name__}: {error}") from None


def _known(name: str) -> bool:
    if name not in {r.name for r in REGIMES}:
        raise KeyError(f"unknown regime {name!r} (known: {', '.join(r.name for r in REGIMES)})")
    return True


def _member(entry: dict) -> Member:
    if not isinstance(entry["learner"], str) or not isinstance(entry["params"], dict):
        raise TypeError(f"member {entry!r} needs a learner name and a dict of parameters")
    return Member(entry["learner"], dict(entry["params"]))


def members_for(meta_features: dict, learners, source: str = SHIPPED) -> tuple[Member, ...]:
    """The members of the portfolio ``source`` for a data set of ``meta_features`` (and ``grouped``), in order,
    restricted to the ``learners`` of the run. Grouped bags whose regime has none of them (a portfolio without
    that regime, a run without its learners) get the members of their size's regime."""
    wanted = set(learners)
    regimes = read_portfolio(source)
    for name in dict.fromkeys((regime_of(meta_features), regime_of({**meta_features, "grouped": False}))):
        members = tuple(m for m in regimes.get(name, ()) if m.learner in wanted)
        if members:
            return members
    return ()
