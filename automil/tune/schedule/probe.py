"""When a trial's cost is probed before it spends its share, and how far its estimate may pass the share:
the policy of the cost probe (:mod:`automil.tune.loop.cost_probe` runs it; ``docs/scale.md``, "Knowing a
learner's cost before spending its share")."""

from __future__ import annotations

import numpy as np

from automil.records import TrialAttr, TrialRecord
from automil.tune.backend.optuna_trials import counts_toward_budget
from automil.tune.portfolio.fit_costs import FitCost
from automil.tune.schedule.ladder import estimated_trial_seconds

__all__ = ["PROBE_CELLS", "PROBE_FRACTIONS", "PROBE_GROWTH", "PROBE_TOLERANCE", "PROBE_SHARE", "worth_probing",
           "cost_unknown", "called_promising", "over_share", "share_allowed", "probe_limits", "PRIOR_TOLERANCE",
           "ANYTIME_REACH", "predicted_trial_seconds", "bag_pairs", "beyond_prior", "scored_rung"]

# Data below this many instance values (stored values when sparse) never has its defaults probed: a fit on
# it finishes in seconds, so the probe would only add its own cost (every classic benchmark is below; a set
# of 10^5 instances of 64 features is above).
PROBE_CELLS = 4_000_000
# The probe's two samples, as fractions of a fold's training bags (whole bags, so bag sizes stay the same).
PROBE_FRACTIONS = (1 / 16, 1 / 8)
# The steepest growth of a fit's seconds in its instances that two probe samples a factor 2 apart may claim for a
# learner that declares none: between them a solver's iteration count varies as much as its size does (MI-SVM,
# 0.11 s then 2.79 s, a measured growth of 4.4), while from the larger sample to all the bags no undeclared
# learner grew faster than 1.51 (experiments/probe_error.py on a set no reported run uses).
PROBE_GROWTH = 1.5
# The probe's largest overestimate of a trial's seconds among the learners whose estimate reached a tenth of
# their share, on two sets no reported run uses (1.39, MI-SVM on 1,500 bags; experiments/probe_error.py): an
# estimate up to this factor over the share may still finish within it (docs/scale.md, "Knowing a learner's cost"),
# for a learner called promising (called_promising).
PROBE_TOLERANCE = 1.4
# The part of its fair share a learner's probe may spend, split over the samples in proportion to their size.
PROBE_SHARE = 0.1
# A learner's shipped fit cost, timed on other data and extrapolated to this data, keeps it from a fair share only
# when its prediction passes the share by this factor: a factor 2 either way is what a cost model of a fit's size
# alone can claim, since a solver's iterations depend on the data.
PRIOR_TOLERANCE = 2.0
# An anytime learner ends in any share, but one that holds less than this part of its epochs or trees is not
# started: a round quarter, not fitted to a run (networks and forests stopped that early scored at chance,
# TransMIL at 11 of 50 epochs, MIRF at 1 of 34 trees).
ANYTIME_REACH = 0.25


def worth_probing(values: int, share: float | None) -> bool:
    """Whether a learner's defaults are first fitted on samples to estimate their cost: only on data of at
    least ``PROBE_CELLS`` instance ``values``, and only under a fair ``share`` (a budget to spend or save)."""
    return share is not None and values >= PROBE_CELLS


def cost_unknown(learner: str, trials: list[TrialRecord], fraction: float | None, ladder: tuple[float, ...],
                 prior: tuple[str, ...]) -> bool:
    """Whether a trial on all the bags (``fraction`` ``None``) goes in blind to the learner's cost, so that
    :func:`worth_probing` data has its defaults fitted on samples first: always without a ``ladder``; with one,
    the first trial of a learner not in the portfolio (``prior``: called promising, it spends its share) and
    without a rung trial that scored (a flat ladder sends it straight to all the bags; a rung's trial stopped
    at its limit or failed measured no cost to go on)."""
    if fraction is not None:
        return False
    if not ladder:
        return True
    return learner not in prior and not any(scored_rung(t) or counts_toward_budget(t) for t in trials)


def scored_rung(trial: TrialRecord) -> bool:
    """A rung's trial that finished without an error: its seconds are the learner's cost on that share."""
    return trial.attrs.get(TrialAttr.RUNG) is not None and trial.finished and not trial.attrs.get(TrialAttr.ERROR)


def called_promising(learner: str, trials: list[TrialRecord], prior: tuple[str, ...]) -> bool:
    """Whether ``learner`` is given the benefit of the doubt by the cost estimates (:func:`over_share`) and by
    its first fits at chance (``cut_to_chance``): named by the portfolio (``prior``), past a rung of the ladder
    (a rung trial of its ``trials`` that scored), or in a run whose portfolio names none of its learners (no
    prior to go by). Why not the others: the portfolio's matrix found their defaults rarely best on data of
    this kind, so the seconds a doubt costs buy a figure that is unlikely to be chosen."""
    return not prior or learner in prior or any(scored_rung(t) for t in trials)


def over_share(estimate: float, share: float, promising: bool = True) -> bool:
    """Whether an ``estimate`` of a trial passes its ``share`` by more than a cost estimate's own error
    (``PROBE_TOLERANCE``), or for a learner not ``promising`` (:func:`called_promising`), at all: a learner is
    stopped only when it would surely not finish, one the portfolio passed over when it likely would not."""
    return estimate > _tolerance(promising) * share


def share_allowed(estimate: float, share: float, promising: bool = True) -> float:
    """The seconds a trial estimated at ``estimate`` may run under its ``share`` when it is not over it
    (:func:`over_share`): the share, or where the estimate of a ``promising`` learner passes it, the probe's
    error's bound. Why: stopped at its share, a trial whose estimate says it ends a little after would spend
    every second for nothing."""
    return _tolerance(promising) * share if estimate > share else share


def _tolerance(promising: bool) -> float:
    """How far past its share a learner's estimate may go: the probe's error for a ``promising`` one, none else."""
    return PROBE_TOLERANCE if promising else 1.0


def probe_limits(share: float) -> list[float]:
    """The time limit of each probe fit: first the warm-up's (a fit on a few bags that bears the one-time
    costs and is not timed), ``PROBE_SHARE`` of the ``share``; then the samples', another ``PROBE_SHARE`` of it in
    proportion to their sizes."""
    total = sum(PROBE_FRACTIONS)
    return [PROBE_SHARE * share] + [PROBE_SHARE * share * f / total for f in PROBE_FRACTIONS]


def predicted_trial_seconds(cost: FitCost, growth: float | None, fit_bags: list[np.ndarray], n_features: int,
                            pairwise: bool = False) -> float:
    """The seconds of a trial of a learner's defaults whose fits train on bags of ``fit_bags`` instances (one
    array of bag sizes a fit) of ``n_features`` features, from the learner's shipped fit ``cost`` (the table's
    larger size): extrapolated in instance values (a fit's work grows with both), or for a ``pairwise`` learner
    (exact self-attention over each bag) in instance pairs times features, at the learner's declared
    ``growth``, else linearly. Why pairs: TransMIL's linear prediction from bags of 40 to 120 fell 6 times short
    of its fits on bags of 50 to 500. Why not the growth between the table's two sizes: on sizes that small it
    is noise (miGraph's 2.05 between 4,000 and 16,000 instances predicted 338 s for a fit of 22 s;
    ``experiments/fit_costs.py --check``)."""
    sizes = [bag_pairs(s) if pairwise else int(np.sum(s)) for s in fit_bags]
    timed = cost.pairs if pairwise else cost.instances
    return estimated_trial_seconds([timed * cost.n_features], [cost.seconds], sum(sizes) / len(sizes) * n_features,
                                   len(sizes), growth or 1.0)


def bag_pairs(sizes) -> int:
    """The ordered pairs of instances within each bag of ``sizes``, summed (what exact self-attention scores)."""
    return int(np.sum(np.square(np.asarray(sizes, dtype=np.int64))))


def beyond_prior(predicted: float, share: float, anytime: bool) -> bool:
    """Whether a trial ``predicted`` from the shipped fit costs (:func:`predicted_trial_seconds`) is not worth
    starting in its ``share``: beyond ``PRIOR_TOLERANCE`` times the share, or for an ``anytime`` learner, a share
    holding less than ``ANYTIME_REACH`` of its work."""
    return predicted * (ANYTIME_REACH if anytime else 1.0 / PRIOR_TOLERANCE) > share
