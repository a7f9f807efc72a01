"""The ladder of the hold-out protocol: every learner's defaults first on small stratified shares of the
training bags (the rungs), and the rule that promotes learners up it by promise per cost.

A rung's score only schedules: its trials never count, never become a study's best, and so never reach a
headline, a chosen model or an ensemble. Only the learners that reach the top rung (all the training bags)
are tuned there. The reasons for the rule are in ``docs/scale.md`` ("The ladder") and ``docs/budget.md``
("Budget").

Pure rules on the budget's records (:class:`~automil.tune.schedule.budget.LearnerState`), like the budget itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from automil.evaluation.chance import above_chance
from automil.records import TrialAttr
from automil.records.protocol import Protocol

__all__ = ["LADDER", "run_ladder", "RUNG_SLACK", "RUNG_FLOOR", "RUNG_MIN_BAGS", "CHEAP_SHARE", "rung_fraction", "cheap",
           "cheapest", "PROMOTE_MARGIN", "ETA", "MIN_PROMOTED", "GROWTH_RANGE", "RungState", "LadderStep", "rung_of",
           "reached_top", "needs_rung", "estimated_seconds", "predicted_score", "promoted", "ladder_step",
           "top_rung", "estimated_trial_seconds", "screened_note", "rung_states", "GROWTH_MIN_SECONDS",
           "FLAT_EVIDENCE", "flat",
           "rungs_in_use", "unranked"]

# The rungs below the top, as fractions of a fold's training bags (whole bags, every class alike): FLAML's
# factor 4 between sample sizes, two rungs so that every learner has a learning curve of two points.
LADDER = (1 / 16, 1 / 4)
# A rung's trial may run this many times its fraction of a fair share of the time left (fixed costs,
# such as a network's first batches, weigh more on a small sample).
RUNG_SLACK = 2.0
# ... and never less than this many seconds (within the time left): a fit's one-time costs in a worker
# (imports, numba compilation) do not shrink with the sample.
RUNG_FLOOR = 5.0
# A rung's sample holds at least this many of a fold's training bags (its fraction is raised to reach it):
# a learner fitted on a dozen bags scores chance whatever it could do, so its curve would say nothing.
RUNG_MIN_BAGS = 32
# A learner whose defaults on all the bags are estimated to take at most this share of the time left (times
# the jobs) reaches the top rung whatever its rung scores: trying it costs little, and a curve on small
# shares misses a learner whose score jumps only with more bags (an SVM whose witnesses need many bags).
CHEAP_SHARE = 0.05
# A learner reaches the top rung when its predicted score is within this of the best prediction (a score on
# a quarter of the bags is itself noisy), among the best 1 / ETA of the learners (successive halving,
# FLAML's factor) and never fewer than MIN_PROMOTED (a choice and an ensemble).
PROMOTE_MARGIN = 0.05
ETA = 4
MIN_PROMOTED = 2
# A measured growth exponent is kept within these bounds: no fit is cheaper than reading its data once,
# and a fixed start-up cost on the small sample must not pass for a cubic solver.
GROWTH_RANGE = (1.0, 3.0)
# A growth is measured only from fits of at least this many seconds: a shorter one is mostly the worker's
# overhead and the operating system's scheduling, which can double it and pass for a steep growth.
GROWTH_MIN_SECONDS = 0.1
# A rung on which at least this many learners scored, none of them above chance by its own uncertainty, is
# flat at chance on this data (few witnesses among many instances: a curve over bag shares stays at chance and
# then jumps): it ranks nothing, so no learner climbs it any more and none is judged on it.
FLAT_EVIDENCE = 3


def run_ladder(protocol: Protocol) -> tuple[float, ...]:
    """The rungs every learner's defaults climb before trials on all bags: the hold-out protocol's."""
    return LADDER if protocol == Protocol.HOLDOUT else ()


@dataclass(frozen=True)
class RungState:
    """One trial of a learner's defaults on a rung: the ``fraction`` of the training bags, the mean of the
    metric over the folds (``None``: stopped or failed), the trial's wall seconds, and whether the score is
    above chance by twice its standard error over the folds (``informative``)."""

    fraction: float
    score: float | None
    seconds: float
    informative: bool = True


def rung_states(trials, metric: str, now: float, chance: float | None = None) -> tuple[RungState, ...]:
    """A study's finished trials on a rung (attribute ``rung``) as :class:`RungState`; a trial that stopped
    or failed (it has an ``error``) has no score. Without a ``chance`` level every score is informative."""
    states = []
    for t in trials:
        if t.attrs.get(TrialAttr.RUNG) is None or not t.finished or t.start is None:
            continue
        score = None if t.attrs.get(TrialAttr.ERROR) else t.attrs.get(metric)
        folds = t.attrs.get(TrialAttr.fold(metric)) or []
        stderr = float(np.std(folds, ddof=1) / np.sqrt(len(folds))) if len(folds) > 1 else 0.0
        seconds = max((t.end.timestamp() if t.end is not None else now) - t.start.timestamp(), 0.0)
        states.append(RungState(t.attrs[TrialAttr.RUNG], score, seconds,
                                chance is None or above_chance(score, stderr, chance)))
    return tuple(states)


def flat(learners, fraction: float) -> bool:
    """Whether the rung ``fraction`` is flat at chance on this data: ``FLAT_EVIDENCE`` learners or more scored
    on it, and none above chance."""
    scored = [r for s in learners if (r := rung_of(s, fraction)) is not None and r.score is not None]
    return len(scored) >= FLAT_EVIDENCE and not any(r.informative for r in scored)


def rungs_in_use(learners, ladder) -> tuple[float, ...]:
    """The rungs of ``ladder`` that are not :func:`flat`: the only ones learners climb and are judged on."""
    return tuple(f for f in ladder if not flat(learners, f))


def unranked(learner, climbing) -> bool:
    """Whether the rungs in use (``climbing``) say nothing of the learner, which then goes on to all the bags:
    it waits for no rung and has no score on any of them (it skipped rungs flat at chance on this data, or its
    trial there was stopped or failed, where one-time costs that do not shrink with the sample, such as a
    network's, can pass a rung's few seconds)."""
    return (not learner.too_slow and not reached_top(learner)
            and not any(needs_rung(learner, i, climbing) for i in range(len(climbing)))
            and not any((r := rung_of(learner, f)) is not None and r.score is not None for f in climbing))


@dataclass(frozen=True)
class LadderStep:
    """What the ladder asks for next: ``learner``'s defaults on ``fraction`` of the bags (``None``: all,
    the top rung) within ``time_limit`` seconds."""

    learner: str
    fraction: float | None
    time_limit: float | None


def rung_fraction(fraction: float, n_bags: int) -> float:
    """The share of ``n_bags`` training bags a rung of ``fraction`` fits on: at least ``RUNG_MIN_BAGS`` of
    them (all, when there are fewer)."""
    return min(max(fraction, RUNG_MIN_BAGS / max(n_bags, 1)), 1.0)


def cheapest(learners, cost):
    """The learner of lowest ``cost(learner)`` seconds, unknown costs (``None``) last, then by name."""
    costs = {s.name: cost(s) for s in learners}
    return min(learners, key=lambda s: (costs[s.name] is None, costs[s.name] or 0.0, s.name))


def rung_of(learner, fraction: float) -> RungState | None:
    """The learner's trial on the rung ``fraction``, if it ran one."""
    return next((r for r in learner.rungs if math.isclose(r.fraction, fraction)), None)


def reached_top(learner) -> bool:
    """Whether the learner ran a trial on all the training bags."""
    return learner.main.trials > 0 or learner.main.best is not None


def needs_rung(learner, i: int, ladder=LADDER) -> bool:
    """Whether the learner waits for its trial on rung ``i``: not run yet, not on the top rung already, and
    (above the lowest) with a score on the rung below."""
    if learner.too_slow or reached_top(learner) or rung_of(learner, ladder[i]) is not None:
        return False
    below = rung_of(learner, ladder[i - 1]) if i else None
    return i == 0 or (below is not None and below.score is not None)


def estimated_trial_seconds(sizes: list[float], seconds: list[float], full: float, fits: int,
                            growth: float | None = None, steepest: float = GROWTH_RANGE[1]) -> float:
    """The seconds of ``fits`` fits on ``full`` training instances, from fits on ``sizes`` instances that
    took ``seconds``: ``t(full) = t(n) * (full / n) ** a`` from the largest sample ``n``, with ``a`` the
    learner's declared ``growth``, else measured between the first and last samples (``log(t2 / t1) /
    log(n2 / n1)``, between ``GROWTH_RANGE[0]`` and ``steepest``; linear from a single sample or from a first
    fit shorter than ``GROWTH_MIN_SECONDS``)."""
    if growth is None:
        growth = GROWTH_RANGE[0]
        if len(sizes) > 1 and sizes[-1] > sizes[0] and seconds[0] >= GROWTH_MIN_SECONDS and seconds[-1] > 0:
            growth = math.log(seconds[-1] / seconds[0]) / math.log(sizes[-1] / sizes[0])
        growth = min(max(growth, GROWTH_RANGE[0]), steepest)
    return fits * seconds[-1] * (full / sizes[-1]) ** growth


def estimated_seconds(learner, fraction: float) -> float | None:
    """The seconds of the learner's defaults on ``fraction`` of the bags, from its scored rungs (growth
    measured between them); ``None`` before any."""
    scored = sorted((r for r in learner.rungs if r.score is not None and r.seconds > 0), key=lambda r: r.fraction)
    if not scored:
        return None
    return estimated_trial_seconds([r.fraction for r in scored], [r.seconds for r in scored], fraction, 1)


def predicted_score(learner) -> float | None:
    """The learner's expected score on all the bags from its learning curve: its score on the highest rung
    plus the gain of its last step up, once more (a curve over factors of 4 in sample size gains no more on
    the next step than on the last; never less than the last score). ``None`` without a rung score."""
    scores = [r.score for r in sorted(learner.rungs, key=lambda r: r.fraction) if r.score is not None]
    if not scores:
        return None
    return scores[-1] + (max(scores[-1] - scores[-2], 0.0) if len(scores) > 1 else 0.0)


def promoted(learners, ladder=LADDER) -> list[str]:
    """The learners the ladder promotes to the top rung, most promising first: among those with a score on
    the highest rung below the top (two rungs' scores, so that a curve still rising is seen), the best
    ``1 / ETA`` (at least ``MIN_PROMOTED``) by :func:`predicted_score`, those beyond ``MIN_PROMOTED`` only
    when within ``PROMOTE_MARGIN`` of the best prediction."""
    scored = [] if not ladder else [s for s in learners
                                     if (r := rung_of(s, ladder[-1])) is not None and r.score is not None]
    if not scored:
        return []
    ranked = sorted(scored, key=lambda s: (-predicted_score(s), s.name))
    best = predicted_score(ranked[0])
    keep = max(MIN_PROMOTED, math.ceil(len(scored) / ETA))
    return [s.name for k, s in enumerate(ranked)
            if k < MIN_PROMOTED or (k < keep and predicted_score(s) >= best - PROMOTE_MARGIN)]


def cheap(learners, ladder, time_left: float | None, jobs: int = 1) -> set[str]:
    """The learners scored on every rung they ran, up to the highest below the top, whose defaults on all the
    bags are estimated at most ``CHEAP_SHARE`` of the time left (times ``jobs``); none without a budget."""
    if time_left is None or not ladder:
        return set()
    limit = CHEAP_SHARE * max(time_left, 0.0) * jobs
    return {s.name for s in learners if not s.too_slow and rung_of(s, ladder[-1]) is not None
            and all(r.score is not None for r in s.rungs) and estimated_seconds(s, 1.0) <= limit}


def top_rung(learners, ladder, time_left: float | None, jobs: int = 1) -> set[str]:
    """The learners that may run trials on all the bags: those that have, the cheap ones (:func:`cheap`),
    and the promoted ones (:func:`promoted`) whose estimated cost there fits a fair share of the time left
    among the promoted still waiting."""
    waiting = [s for s in learners if s.name in set(promoted(learners, ladder)) and not reached_top(s)
               and not s.too_slow]
    share = None if time_left is None else max(time_left, 0.0) * jobs / max(len(waiting), 1)
    return {s.name for s in learners if reached_top(s) or unranked(s, ladder)} | cheap(
        learners, ladder, time_left, jobs) | {
        s.name for s in waiting if share is None or (estimated_seconds(s, 1.0) or 0.0) <= share}


def ladder_step(learners, ladder, time_left: float | None, jobs: int = 1) -> LadderStep | None:
    """The next rung trial, lowest rung first: among the learners waiting for rung ``i`` (:func:`needs_rung`),
    those whose estimated cost there fits their share (:func:`_rung_share`, shared with the learners that
    ran the rung already), cheapest first (unknown cost
    last, then by name). ``None`` when no rung trial is due: promotion (:func:`top_rung`) decides the rest."""
    for i, fraction in enumerate(ladder):
        waiting = [s for s in learners if needs_rung(s, i, ladder)]
        if not waiting:
            continue
        # a fair share among all the learners of the rung, not only those still waiting: the learners of
        # unknown cost go last and would otherwise be left alone with the rung's whole time
        on_rung = len(waiting) + sum(rung_of(s, fraction) is not None for s in learners)
        share = _rung_share(time_left, jobs, on_rung, fraction)
        costs = {s.name: estimated_seconds(s, fraction) for s in waiting}
        fitting = [s for s in waiting if share is None or costs[s.name] is None or costs[s.name] <= share]
        if fitting:
            first = cheapest(fitting, lambda s: costs[s.name])
            return LadderStep(first.name, fraction, share)
    return None


def _rung_share(time_left: float | None, jobs: int, waiting: int, fraction: float) -> float | None:
    """A rung trial's time limit: ``RUNG_SLACK`` times the rung's fraction of a fair share of the time left,
    at least ``RUNG_FLOOR`` seconds but never past the time left."""
    if time_left is None:
        return None
    left = max(time_left, 0.0)
    return min(max(left * jobs / waiting * fraction * RUNG_SLACK, RUNG_FLOOR), left)


def screened_note(rungs, metric: str) -> str | None:
    """What a learner left below the top rung reached: ``screened: BACC 0.61 on 1/4 of the bags, ~540 s on
    all`` (its highest scored rung and its defaults' estimated seconds on all the bags); ``None`` without a
    rung score."""
    scored = sorted((r for r in rungs if r.score is not None), key=lambda r: r.fraction)
    if not scored:
        return None
    top = scored[-1]
    name = {"balanced_accuracy": "BACC", "accuracy": "ACC"}.get(metric, metric)
    timed = [r for r in scored if r.seconds > 0]
    cost = "" if not timed else (
        f", ~{estimated_trial_seconds([r.fraction for r in timed], [r.seconds for r in timed], 1.0, 1):.0f} s on all")
    return f"screened: {name} {top.score:.2f} on 1/{round(1 / top.fraction)} of the bags{cost}"
