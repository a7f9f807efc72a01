"""The tuning phase of a run: ask the budget policy (:mod:`automil.tune.schedule`) where the next trial
goes, run it, and repeat until the tuning deadline or until every study is full."""

from __future__ import annotations

import time

import numpy as np

from automil.records import TrialAttr, TrialRecord
from automil.tune.listener import LearnerStanding, Listener, Standing, StudyProgress
from automil.tune.plan import Plan
from automil.tune.schedule import (LearnerState, StudyState, contenders, final_reserve, next_step,
                                  waits_for_defaults)
from automil.tune.studies import study_name
from automil.tune.tracking import Guarded
from automil.tune.trial_states import best_trial, counts_toward_budget, records
from automil.tune.trials import configure_study, run_trial
from automil.tune.warm_start import WARM_START_ATTR, warm_start, warm_start_note

__all__ = ["tune_studies", "learner_state", "standing"]


def tune_studies(plan: Plan, bags, storage, worker, tracking: Guarded, listener: Listener, index: int):
    """Run trials where the budget policy sends them until it has none left or the tuning time is up.

    ``index`` numbers this process among the ``--jobs`` processes sharing the studies: they all follow
    the policy on the studies' shared state, so they agree on where the time goes.
    """
    import optuna

    from automil import plugins

    worker.set_data(bags)
    worker.wait_started()  # outside any trial: start-up is not a trial's cost
    studies = {learner: [optuna.load_study(study_name=study_name(plan.dataset, learner, split), storage=storage)
                         for split in plan.options.splits] for learner in plan.learners}
    configured, parents, warmed = set(), {}, set()
    while True:
        now = time.time()
        trials = {learner: [records(s) for s in studies[learner]] for learner in plan.learners}
        states = [learner_state(learner, trials[learner], plan.options.metric, plan.start, now,
                                plan.options.directions)
                  for learner in plan.learners]
        # the final evaluation's share grows as the learners' costs become known
        deadline = plan.tuning_deadline(final_reserve(states, plan.options.folds, plan.options.jobs))
        if deadline is not None and now >= deadline:
            break
        left = None if deadline is None else deadline - now
        step = next_step(states, plan.options.n_trials, left, plan.options.jobs,
                         equal=plan.options.allocation == "equal")
        listener.standing(standing(states, plan, None if step is None else step.learner, now, deadline))
        if step is None:
            break
        study = studies[step.learner][step.study]
        if (step.learner, step.study) not in configured:
            configure_study(study, plan, index)
            configured.add((step.learner, step.study))
        spec = plugins.get_learner(step.learner)
        if step.learner not in parents:
            parents[step.learner] = tracking.study_run(study_name(plan.dataset, step.learner), plan.dataset, spec,
                                                       {"automil.protocol": plan.options.protocol})
        if plan.options.warm_start and (step.learner, step.study) not in warmed:
            if warm_start(study, step.learner, plan.dataset, storage):
                warmed.add((step.learner, step.study))
        split = plan.options.splits[step.study]
        trial = run_trial(study, trials[step.learner][step.study], spec, split, plan, bags, worker,
                          np.inf if deadline is None else deadline, step.time_limit)
        if split is None and parents[step.learner] is not None:
            tracking.log_trial(parents[step.learner], trial, study.study_name)
    if plan.options.warm_start and index == 0:  # the main process tells; the helpers' listeners are silent
        _announce_warm_starts(studies, listener)
    for learner in plan.learners:
        listener.tuned(_progress(plan, learner, None, records(studies[learner][0])))


def _announce_warm_starts(studies: dict, listener: Listener):
    """One line per learner about its warm start, read from the studies, so that a decision another
    ``--jobs`` process made is told too (its own listener is silent); a learner's studies share a source."""
    for learner, learner_studies in studies.items():
        notes = (warm_start_note(learner, study.user_attrs.get(WARM_START_ATTR)) for study in learner_studies)
        note = next((note for note in notes if note is not None), None)
        if note is not None:
            listener.message(note)


def learner_state(learner: str, studies: list[list[TrialRecord]], metric: str, run_start: float,
                  now: float, directions=("maximize",)) -> LearnerState:
    """The budget's view of a learner from the trial records of its studies (the study on all bags first);
    the standard error of a study's best value comes from that trial's fold scores of ``metric`` (the best
    trial as :func:`best_trial` picks it under the studies' ``directions``).

    ``seconds`` adds up the wall-clock time of all its trials (a running one until ``now``);
    ``expected_seconds`` is the mean duration of its finished trials on all bags, when it has any;
    ``too_slow`` says that its defaults passed their fair share since ``run_start`` (this run).
    """
    state = []
    seconds = 0.0
    for trials in studies:
        counted = [t for t in trials if counts_toward_budget(t)]
        best = best_trial(trials, directions)
        stderr = 0.0
        if best is not None:
            folds = best.attrs.get(f"fold_{metric}") or []
            if len(folds) > 1:
                stderr = float(np.std(folds, ddof=1) / np.sqrt(len(folds)))
        state.append(StudyState(len(counted), None if best is None else best.value, stderr))
        seconds += sum(_duration(t, now) for t in trials if t.start is not None)
    main = studies[0]
    durations = [_duration(t, now) for t in main if t.finished and t.start is not None and t.end is not None]
    too_slow = any(t.attrs.get(TrialAttr.TOO_SLOW) and t.start is not None and t.start.timestamp() >= run_start
                   for t in main)
    return LearnerState(learner, tuple(state), seconds, float(np.mean(durations)) if durations else None, too_slow)


def standing(states: list[LearnerState], plan: Plan, running: str | None, now: float,
             deadline: float | None) -> Standing:
    """What the listener shows: every learner's trials, best score and phase in the policy, and the time
    left until tuning stops at ``deadline``."""
    n_trials = plan.options.n_trials
    weights = contenders(states, n_trials)
    rows = []
    for state in states:
        if state.too_slow:
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


def _progress(plan: Plan, learner: str, split: int | None, trials) -> StudyProgress:
    options = plan.options
    return StudyProgress(learner, split, options.folds, options.n_trials, options.metric, trials)

