"""The portfolio automil ships (``portfolio.json``, built by ``experiments/portfolio.py``) and the members a data
set gets: those of its regime, in the order they were chosen.

A regime is a range of the mean bag size: small bags (a few instances, the classic benchmarks) and large bags
(tens to thousands of instances, a few witnesses among them: pathology slides), where the learners that win
differ; large bags in groups of several (a patient's slides) are a regime of their own, since what a
patient's slides share can teach a learner the patients instead of the witnesses; and slides of thousands of
patches (``COHORTS``), grouped or not, are the cohorts pathology users have, where one fit costs minutes and a
run commits to a first model before it searches (:mod:`automil.tune.final.first_model`). A regime's members are
learner + parameter pairs (Optuna's parameter names, as a study stores them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path

__all__ = ["Regime", "REGIMES", "COHORTS", "COHORT_MEAN_BAG_SIZE", "Member", "grouped", "regime_of", "regimes_of",
           "regimes", "members_for", "read_portfolio", "estimator_params", "SHIPPED"]


@dataclass(frozen=True)
class Regime:
    """Data sets whose mean bag size lies in ``[min_mean_bag_size, max_mean_bag_size)``, in groups of several
    bags (``grouped``) or not."""

    name: str
    min_mean_bag_size: float
    max_mean_bag_size: float
    grouped: bool = False


SHIPPED = "shipped"  # the portfolio automil ships, next to this module
# Cohorts: slides of 2,000 patches and more on average (pathology's 5,000 to 20,000), where a network's epoch
# reads gigabytes and one fit takes minutes; grouped or not (a regime that is not grouped serves both).
COHORT_MEAN_BAG_SIZE = 2000.0
COHORTS = "cohorts"
# From the most general to the most specific (regimes_of prefers the later). The boundary: bags of 32 instances
# or more are where a witness is rare enough that a bag's mean hides it.
REGIMES = (Regime("small bags", 0.0, 32.0), Regime("large bags", 32.0, float("inf")),
           Regime("slides by patient", 32.0, float("inf"), grouped=True),
           Regime(COHORTS, COHORT_MEAN_BAG_SIZE, float("inf")))


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


def regime_of(meta_features: dict, source: str = SHIPPED) -> str:
    """The name of the regime of a data set, from its meta-features (``mean_bag_size``) and ``grouped`` (absent:
    not grouped): the first of :func:`regimes_of`."""
    return regimes_of(meta_features, source)[0]


def regimes_of(meta_features: dict, source: str = SHIPPED) -> tuple[str, ...]:
    """The regimes (of the portfolio ``source``, :func:`regimes`) whose range holds the data set's mean bag size,
    the most specific first (the later in ``REGIMES``: cohorts, then slides by patient for grouped bags, then
    the regime of their size). A regime that is not grouped serves grouped bags too. :func:`members_for` takes
    the first of them with members."""
    size = float(meta_features["mean_bag_size"])
    in_groups = bool(meta_features.get("grouped", False))
    return tuple(r.name for r in reversed(regimes(source))
                 if r.min_mean_bag_size <= size < r.max_mean_bag_size and (in_groups or not r.grouped))


@cache
def read_portfolio(source: str = SHIPPED) -> dict[str, tuple[Member, ...]]:
    """The members of every regime of a portfolio file (``SHIPPED``: automil's own), by regime name.

    Raises
    ------
    ValueError
        When the file is not a portfolio: not JSON, no ``regimes``, a regime without a known name, or a
        member without a learner and its parameters; the message names the file and the place.
    """
    return {name: members for name, (members, _) in _read(source).items()}


@cache
def regimes(source: str = SHIPPED) -> tuple[Regime, ...]:
    """``REGIMES`` as the portfolio ``source`` bounds them: a regime of the file may give its own
    ``min_mean_bag_size`` (a portfolio built on other sizes; a test's small slides taken for a cohort)."""
    bounds = {name: low for name, (_, low) in _read(source).items() if low is not None}
    return tuple(replace(r, min_mean_bag_size=float(bounds.get(r.name, r.min_mean_bag_size))) for r in REGIMES)


@cache
def _read(source: str) -> dict[str, tuple[tuple[Member, ...], float | None]]:
    """Every regime of the file: its members and its own lower bound of the mean bag size, if it gives one."""
    if source == SHIPPED:
        where, text = "automil's portfolio.json", resources.files(__package__).joinpath("portfolio.json").read_text()
    else:
        where, text = source, Path(source).read_text()
    try:
        entries = json.loads(text)["regimes"]
        return {entry["name"]: (tuple(_member(m) for m in entry["members"]), _bound(entry)) for entry in entries
                if _known(entry["name"])}
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ValueError(f"{where} is not a portfolio (a JSON object whose 'regimes' each have a 'name' and "
                         f"'members' of 'learner' and 'params', and may have a 'min_mean_bag_size'): "
                         f"{type(error).__name__}: {error}") from None


def _bound(entry: dict) -> float | None:
    low = entry.get("min_mean_bag_size")
    if low is not None and (isinstance(low, bool) or not isinstance(low, int | float) or low < 0):
        raise TypeError(f"regime {entry['name']!r}: min_mean_bag_size {low!r} is not a number of instances")
    return low


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
    restricted to the ``learners`` of the run: those of its most specific regime that has any
    (:func:`regimes_of`). So a regime whose members are not built yet (the cohorts), or none of whose learners
    run (networks without PyTorch), takes the members of the next one: grouped slides those of "slides by
    patient", then "large bags"."""
    wanted = set(learners)
    by_regime = read_portfolio(source)
    for name in regimes_of(meta_features, source):
        members = tuple(m for m in by_regime.get(name, ()) if m.learner in wanted)
        if members:
            return members
    return ()


def estimator_params(spec, params: dict, bags) -> dict:
    """The learner's estimator parameters at the point ``params`` of its space (Optuna's names, as a member
    holds them) on ``bags``: the mapping the driver makes through ``search_space(trial)``, which may read the
    data's facts, without a study in a storage. Raises ``optuna.TrialPruned`` when the space refuses the
    point on this data."""
    import optuna

    from automil.records import TrialAttr

    study = optuna.create_study()
    study.enqueue_trial(params)
    trial = study.ask()
    for key, value in ((TrialAttr.N_FEATURES, bags.n_features), (TrialAttr.N_INSTANCES, bags.n_instances),
                       (TrialAttr.N_CLASSES, len(bags.classes))):
        trial.set_user_attr(key, value)  # what a search space may read, as a trial holds it
    return spec.search_space(trial)
