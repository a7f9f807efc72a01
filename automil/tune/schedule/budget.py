"""The time budget of a run: where the next second of tuning goes, when tuning stops and what the final
evaluation keeps.

Tuning gives every learner's defaults first, cheapest first, each within a fair share; then the learners
whose tuning scores are close to the best, each given seconds (not trials) in proportion to how close it
is. The final evaluation keeps its estimated cost from ``--timeout`` (within ``FINAL_SHARE``), and stops
what the headline figure does not need in time to log every result.

The policy sees plain records (what the studies hold now) and answers with the next study to run a trial
in, so that it can be tested on made-up states and so that several tuning processes sharing one storage
reach the same decisions from the same state. The reasons for its design are in ``docs/budget.md``
("Budget").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from automil.records import TrialAttr, TrialRecord, TrialState
from automil.records.protocol import Protocol
from automil.tune.backend.optuna_trials import best_trial, counts_toward_budget
from automil.tune.listener import LearnerStanding, Standing
from automil.tune.options import Allocation
from automil.tune.schedule.ladder import (
    GROWTH_RANGE,
    RungState,
    cheapest,
    estimated_seconds,
    estimated_trial_seconds,
    ladder_step,
    needs_rung,
    reached_top,
    run_ladder,
    rung_states,
    rungs_in_use,
    top_rung,
)
from automil.tune.studies.plan import Plan
from automil.tune.studies.trial_folds import INNER_FIFTHS

__all__ = ["StudyState", "LearnerState", "Step", "next_step", "contenders", "waits_for_defaults", "final_reserve",
           "learner_state", "standing", "tuning_deadline", "trial_stop", "final_deadline", "fits_deadline",
           "FINAL_SHARE", "estimated_trial_seconds", "run_seconds", "GROWTH_RANGE", "final_fits", "prior_step",
           "ends_in_time", "first_cost"]

# A learner whose default trial completed nothing gets this many tries in all before it waits for
# promise like any other (a second point of its space may work where its defaults did not).
FIRST_TRIES = 2
# Closeness that still counts as "level with the leader": twice the standard error of the leader's
# mean over the folds, and never less than this (2 points of the metric).
MIN_MARGIN = 0.02
# The weight of a learner at the edge of the margin, relative to the leader's 1: it still gets some
# seconds, since the leader's score is itself an estimate.
EDGE_WEIGHT = 0.25
# The final evaluation's estimate is stretched by this much: its workers start afresh (and compile numba
# code again), and a model is fitted on all bags.
RESERVE_MARGIN = 1.5
# Shares of --timeout the final evaluation keeps from tuning: its estimated cost (the headline refits and
# the models), but at least the first (room for repeats) and at most the second (tuning keeps the rest).
FINAL_SHARE = (0.25, 0.5)
# Seconds MLflow takes to log one learner's result (its trials, model and figures; sqlite store, 2 cores).
LOG_SECONDS = 1.5


@dataclass(frozen=True)
class StudyState:
    """One study of a learner as the budget sees it.

    ``trials`` counts the trials toward ``--n-trials`` (running ones included); ``best`` is the best
    value (``None`` without a completed trial); ``stderr`` the standard error of that value (the standard
    deviation of the best trial's fold scores over the square root of their number); ``running`` the
    trials among ``trials`` that another process is running now.
    """

    trials: int = 0
    best: float | None = None
    stderr: float = 0.0
    running: int = 0


@dataclass(frozen=True)
class LearnerState:
    """A learner's studies (the main study first, then the outer splits of nested CV, if any), the
    wall-clock seconds its trials have taken so far, its expected seconds per trial on all bags when known,
    whether its defaults were stopped as too slow for their fair share in this run, its trials on the
    rungs of the ladder (hold-out protocol), and the seconds of its defaults on all the bags that its shipped
    fit cost predicts (``None``: none)."""

    name: str
    studies: tuple[StudyState, ...]
    seconds: float = 0.0
    expected_seconds: float | None = None
    too_slow: bool = False
    rungs: tuple[RungState, ...] = ()
    predicted_seconds: float | None = None

    @property
    def main(self) -> StudyState:
        return self.studies[0]

    def open_studies(self, n_trials: int | None) -> list[int]:
        """The studies that may take another trial (fewer than ``n_trials``)."""
        return [i for i, s in enumerate(self.studies) if n_trials is None or s.trials < n_trials]

    def next_study(self, n_trials: int | None) -> int:
        """The open study with the fewest trials, the study on all folds first on ties: a learner's
        studies fill evenly, since its nested figure needs every outer split tuned alike."""
        return min(self.open_studies(n_trials), key=lambda i: (self.studies[i].trials, i))


@dataclass(frozen=True)
class Step:
    """Run one trial of ``learner`` in its study ``study`` (0: all folds; ``i + 1``: outer split ``i``).

    ``time_limit``: seconds the trial may run before it is stopped as too slow for its fair share
    (``None``: until the tuning deadline). ``phase``: ``"rung"``, ``"defaults"``, ``"promise"`` or
    ``"rest"``; ``fraction``: the share of every fold's training bags a ``"rung"`` trial fits on; ``estimate``:
    a ``"defaults"`` trial's :func:`first_cost` (``None``: unknown, or a portfolio learner's: it spends its share).
    """

    learner: str
    study: int
    phase: str
    time_limit: float | None = None
    fraction: float | None = None
    estimate: float | None = None


def next_step(learners: list[LearnerState], n_trials: int | None, time_left: float | None,
              jobs: int = 1, equal: bool = False, ladder: tuple[float, ...] = (),
              prior: tuple[str, ...] = (), anytime: tuple[str, ...] = ()) -> Step | None:
    """The trial to run next, or ``None`` when no study may take one.

    The learners of the portfolio (``prior``, in its order) run their first trials before all others, on
    all the bags (never on the ladder's rungs: the portfolio was chosen on many tasks, a rung is one small
    sample of this one), each within a fair share of the time left among the portfolio's learners still
    waiting (:func:`prior_step`).

    First every learner gets its defaults in the study on all folds, cheapest first (:func:`first_cost`;
    unknown last, then by name), each with a fair share of the time left: the time left times ``jobs``
    (processes running trials at once) divided by the learners still waiting.
    Then the seconds go to :func:`contenders`, the one that has had the fewest seconds for its weight
    first, into its study with the fewest trials (the study on all folds first on ties). When every
    learner with a score is full, the learners without one share what is left (phase ``"rest"``).
    With ``equal``, every learner with a score and an open study contends with weight 1 (the same
    seconds each), whatever its score.

    With a ``ladder`` (the hold-out protocol), every learner's defaults first climb its rungs
    (:func:`~automil.tune.schedule.ladder.ladder_step`), and only the learners promoted to the top rung
    (:func:`~automil.tune.schedule.ladder.top_rung`) take part in what follows. The ``anytime`` learners
    (whose fits end in their time) skip the rungs: their low fidelity is their epochs or trees on all the
    bags, and a rung, which stops them as it stops any learner, buys nothing of them (a network stopped at
    a rung's few seconds has learned nothing, and then runs on all the bags as one the rungs cannot rank).

    No learner's trial that its measured seconds say cannot end before the deadline is started
    (:func:`ends_in_time`): it would buy nothing, and the seconds go to a trial that ends, or to none.
    """
    first = prior_step(learners, n_trials, time_left, jobs, prior)
    if first is not None:
        return first
    if ladder:  # the rungs flat at chance on this data rank nothing: no one climbs them
        climbing = rungs_in_use(learners, ladder)
        rung = ladder_step([s for s in learners if s.name not in anytime], climbing, time_left, jobs)
        if rung is not None:
            return Step(rung.learner, 0, "rung", rung.time_limit, rung.fraction)
        top = top_rung(learners, climbing, time_left, jobs)
        learners = [s for s in learners if s.name in top or s.name in anytime]
    learners = [s for s in learners if ends_in_time(s, time_left)]
    waiting = [s for s in learners if waits_for_defaults(s, n_trials)]
    if waiting:
        first = cheapest(waiting, lambda s: first_cost(s, ladder))
        share = None if time_left is None else max(time_left, 0.0) * jobs / len(waiting)
        return Step(first.name, 0, "defaults", share, estimate=first_cost(first, ladder))
    weights = shares(learners, n_trials, equal)
    if weights:
        by_name = {s.name: s for s in learners}
        name = min(weights, key=lambda n: (by_name[n].seconds / weights[n], by_name[n].seconds, n))
        return Step(name, by_name[name].next_study(n_trials), "promise")
    # Every learner with a score is full: time left goes to those without one, least served first.
    rest = [s for s in learners if not s.too_slow and s.open_studies(n_trials)]
    if not rest:
        return None
    learner = min(rest, key=lambda s: (s.seconds, s.name))
    return Step(learner.name, learner.next_study(n_trials), "rest")


def first_cost(learner: LearnerState, ladder: tuple[float, ...]) -> float | None:
    """What the learner's defaults on all the bags are thought to cost: their measured seconds; before any, on
    the ``ladder``, an estimate from its rungs; else its shipped fit cost's prediction (``None``: unknown)."""
    measured = learner.expected_seconds
    if measured is None and ladder:
        measured = estimated_seconds(learner, 1.0)
    return learner.predicted_seconds if measured is None else measured


def ends_in_time(learner: LearnerState, time_left: float | None) -> bool:
    """Whether a trial of ``learner`` on all the bags, at the mean seconds of its trials there so far, ends
    within the ``time_left`` before the tuning deadline (a learner of unknown cost may try). Why: the
    deadline cuts a trial that does not, and a cut trial counts for nothing (no figure, no score), while the
    worker it held could have run a trial that ends."""
    return time_left is None or learner.expected_seconds is None or learner.expected_seconds <= time_left


def prior_step(learners: list[LearnerState], n_trials: int | None, time_left: float | None, jobs: int,
               prior: tuple[str, ...]) -> Step | None:
    """The first trial of the portfolio's next learner (``prior`` order) that waits for one, within the time
    left times ``jobs`` divided by the portfolio's learners still waiting; ``None`` when none waits."""
    waiting = [s for s in learners if s.name in prior and waits_for_defaults(s, n_trials)
               and ends_in_time(s, time_left)]
    if not waiting:
        return None
    first = min(waiting, key=lambda s: prior.index(s.name))
    share = None if time_left is None else max(time_left, 0.0) * jobs / len(waiting)
    return Step(first.name, 0, "defaults", share)


def waits_for_defaults(learner: LearnerState, n_trials: int | None) -> bool:
    """Whether the learner has yet to run its defaults (or a second point after defaults that completed
    nothing) in its study on all folds. Not while its first trial runs in another process: a second try
    follows a first that ended without a score, never doubles one still running."""
    main = learner.main
    return (not learner.too_slow and main.best is None and main.trials < FIRST_TRIES and main.running == 0
            and (n_trials is None or main.trials < n_trials))


def shares(learners: list[LearnerState], n_trials: int | None, equal: bool) -> dict[str, float]:
    """The learners that share the seconds after the defaults, with their weights: :func:`contenders`, or
    with ``equal`` every learner with a score and an open study, weight 1."""
    if equal:
        return {s.name: 1.0 for s in learners if s.main.best is not None and s.open_studies(n_trials)}
    return contenders(learners, n_trials)


def contenders(learners: list[LearnerState], n_trials: int | None) -> dict[str, float]:
    """The learners that share the seconds after the defaults, with their weights.

    Among the learners with a completed trial on all folds and a study open for more trials, the leader
    has the best tuning score; a learner within the margin (twice the standard error of the leader's
    fold mean, at least ``MIN_MARGIN``) is a contender, weighted from 1 (level with the leader) down to
    ``EDGE_WEIGHT`` (at the margin's edge). A learner further behind gets nothing until the contenders'
    studies are full.
    """
    scored = [s for s in learners if s.main.best is not None and s.open_studies(n_trials)]
    if not scored:
        return {}
    leader = max(scored, key=lambda s: s.main.best)
    margin = max(MIN_MARGIN, 2.0 * leader.main.stderr)
    floor = leader.main.best - margin
    return {s.name: EDGE_WEIGHT + (1.0 - EDGE_WEIGHT) * (s.main.best - floor) / margin
            for s in scored if s.main.best >= floor}


def final_fits(folds: int, protocol: Protocol = Protocol.NESTED, inner_holdout: bool = False) -> float:
    """The final evaluation's essential fits of a learner in trials on all folds of its main study (cost
    linear in bags): nested, ``folds`` headline refits (one trial) and the model (``1 / folds`` trial);
    hold-out, one refit on the ``folds - 1`` training folds and the model on all, against a trial of
    ``folds - 1`` fits on ``folds - 2`` folds each, or with an ``inner_holdout`` one fit on 4/5 of the
    training folds (:mod:`automil.tune.studies.trial_folds`)."""
    if protocol == Protocol.HOLDOUT:
        trial = (folds - 1) / folds * (1 - 1 / INNER_FIFTHS) if inner_holdout else (folds - 1) * (folds - 2) / folds
        return (2 * folds - 1) / folds / trial
    return 1.0 + 1.0 / folds


def final_reserve(learners: list[LearnerState], folds: int, jobs: int = 1,
                  protocol: Protocol = Protocol.NESTED, inner_holdout: bool = False, results: int = 0) -> float:
    """Seconds to keep for the final evaluation's essentials: logging its ``results`` (``LOG_SECONDS`` each, as
    :func:`fits_deadline` leaves them), and for every learner with a score its headline refits and its model
    (:func:`final_fits`), on ``jobs`` workers, stretched by ``RESERVE_MARGIN``; at least the costliest learner's
    fits that wait for one another (its model follows the choice, which waits for its refits; the hold-out
    protocol's one refit leaves a second worker nothing of it to share). Learners of unknown cost add no fits
    until measured."""
    known = [s.expected_seconds for s in learners if s.main.best is not None and s.expected_seconds is not None]
    fits = final_fits(folds, protocol, inner_holdout)
    shared = sum(known) * fits / jobs
    chain = fits if protocol == Protocol.HOLDOUT else 1.0 / jobs + 1.0 / folds
    return LOG_SECONDS * results + RESERVE_MARGIN * max(shared, max(known, default=0.0) * chain)


def run_seconds(studies: list[list[TrialRecord]], run_start: float, now: float) -> float:
    """The wall-clock seconds of a learner's trials (all its studies) that started in this run."""
    return sum(_duration(t, now) for trials in studies for t in trials
               if t.start is not None and t.start.timestamp() >= run_start)


def tuning_deadline(plan: Plan, reserve: float = 0.0) -> float | None:
    """When tuning stops: ``reserve`` seconds (the final evaluation's estimated cost, :func:`final_reserve`)
    before the end of the budget, within the bounds of ``FINAL_SHARE``; ``None`` without ``--timeout``."""
    t = plan.options.timeout
    if t is None:
        return None
    low, high = FINAL_SHARE
    return plan.start + t - min(max(reserve, low * t), high * t)


def trial_stop(started: float, share: float | None, deadline: float) -> tuple[float, bool]:
    """When a trial that ``started`` with the learner's ``share`` (``None``: none) must stop, and whether
    that stop is the learner's own share. A share that ends before the tuning ``deadline`` is the learner's:
    passing it makes the learner too slow. One the deadline cuts is the run's budget running out, as for any
    other trial, and all the learner has left."""
    own = share is not None and started + share < deadline
    return (started + share if own else deadline), own


def final_deadline(plan: Plan) -> float:
    """When the run's budget ends (infinity without ``--timeout``)."""
    t = plan.options.timeout
    return math.inf if t is None else plan.start + t


def fits_deadline(plan: Plan, results: int, tracked: bool, model_seconds: float = 0.0) -> float:
    """When the final evaluation's fits stop (every one but the chosen model's, which a run ends with): in
    time to log ``results`` results before the budget ends, when ``tracked``, and for the fits before the
    choice, to fit the chosen model in its estimated ``model_seconds`` (stretched by ``RESERVE_MARGIN``;
    none under the hold-out protocol, where a model that would end late is the hold-out refit instead)."""
    if plan.options.protocol == Protocol.HOLDOUT:
        model_seconds = 0.0
    return final_deadline(plan) - (LOG_SECONDS * results + RESERVE_MARGIN * model_seconds if tracked else 0.0)


def learner_state(learner: str, studies: list[list[TrialRecord]], metric: str, run_start: float,
                  now: float, directions=("maximize",), chance: float | None = None,
                  predicted: float | None = None) -> LearnerState:
    """The budget's view of a learner from the trial records of its studies (the study on all bags first);
    the standard error of a study's best value comes from that trial's fold scores of ``metric`` (the best
    trial as :func:`best_trial` picks it under the studies' ``directions``).

    ``seconds`` adds up the wall-clock time of all its trials (a running one until ``now``);
    ``expected_seconds`` is the mean duration of its finished trials on all bags, when it has any;
    ``too_slow`` says that its defaults passed their fair share since ``run_start`` (this run);
    ``rungs`` are its trials on the rungs of the ladder (attribute ``rung``; a failed or stopped one has no
    score; informative when above ``chance`` by their uncertainty), which count toward nothing else: a rung
    trial stopped at its limit does not make the learner too slow (its one-time costs may pass a rung's few
    seconds); only its trial on all the bags can. ``predicted`` is what its shipped fit cost predicts of its
    defaults on all the bags (``Plan.predicted_seconds``).
    """
    state = []
    seconds = 0.0
    for trials in studies:
        counted = [t for t in trials if counts_toward_budget(t)]
        best = best_trial(trials, directions)
        stderr = 0.0
        if best is not None:
            folds = best.attrs.get(TrialAttr.fold(metric)) or []
            if len(folds) > 1:
                stderr = float(np.std(folds, ddof=1) / np.sqrt(len(folds)))
        running = sum(t.state is TrialState.RUNNING for t in counted)
        state.append(StudyState(len(counted), None if best is None else best.value, stderr, running))
        seconds += sum(_duration(t, now) for t in trials if t.start is not None)
    main = studies[0]
    durations = [_duration(t, now) for t in main if t.finished and t.start is not None and t.end is not None
                 and t.attrs.get(TrialAttr.RUNG) is None]
    too_slow = any(t.attrs.get(TrialAttr.TOO_SLOW) and t.attrs.get(TrialAttr.RUNG) is None
                   and t.start is not None and t.start.timestamp() >= run_start for t in main)
    return LearnerState(learner, tuple(state), seconds, float(np.mean(durations)) if durations else None, too_slow,
                        rung_states(main, metric, now, chance), predicted)


def standing(states: list[LearnerState], plan: Plan, running: str | None, now: float,
             deadline: float | None) -> Standing:
    """What the listener shows: every learner's trials, best score and phase in the policy, and the time
    left until tuning stops at ``deadline``."""
    n_trials = plan.options.n_trials
    ladder = rungs_in_use(states, run_ladder(plan.options.protocol))
    top = top_rung(states, ladder, deadline and deadline - now, plan.options.jobs) if ladder else None
    weights = shares([s for s in states if top is None or s.name in top], n_trials,
                     plan.options.allocation == Allocation.EQUAL)
    rows = []
    for state in states:
        if state.name in plan.prior and waits_for_defaults(state, n_trials):
            phase = "portfolio"  # its first portfolio point, before the rungs (which it skips)
        elif ladder and not reached_top(state) and any(needs_rung(state, i, ladder) for i in range(len(ladder))):
            phase = "screening"
        elif ladder and state.rungs and state.name not in top:
            phase = "screened"
        elif state.too_slow:
            phase = "too slow"
        elif waits_for_defaults(state, n_trials):
            phase = "defaults"
        elif not state.open_studies(n_trials):
            phase = "full"
        elif state.name in weights:
            phase = "contender"
        else:
            phase = "behind" if state.main.best is not None else "no score"
        rows.append(LearnerStanding(state.name, sum(s.trials for s in state.studies),
                                    None if n_trials is None else n_trials * len(state.studies), state.main.best,
                                    phase))
    return Standing(running, rows, plan.options.metric, now - plan.start,
                    None if deadline is None else max(deadline - now, 0.0))


def _duration(trial: TrialRecord, now: float) -> float:
    end = trial.end.timestamp() if trial.end is not None else now
    return max(end - trial.start.timestamp(), 0.0)
