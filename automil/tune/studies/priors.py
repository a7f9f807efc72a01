"""The portfolio's points in a learner's studies: what a new study tries first and what it queues next.

A learner of the run's portfolio (:mod:`automil.tune.portfolio.members`) starts from its portfolio points
instead of its plugin's defaults: the first point is the study's first trial (queued again if cut short, as
the defaults are), the learner's other points, then its defaults when the portfolio did not hold them, are
queued once after that first trial counts. They were chosen on other tasks, so, like the defaults, they carry
nothing of this data set's folds: an outer split the budget never reached may take them.
"""

from __future__ import annotations

from automil.records import TrialAttr

__all__ = ["first_point", "later_points", "queue_later_points", "PORTFOLIO_ATTR"]

# The study user attribute that says the later points are queued (once, whichever process does it).
PORTFOLIO_ATTR = "portfolio_queued"


def _points(spec, members) -> list[dict]:
    """The learner's portfolio points in order (each a whole point of its space, as a study stores it: a
    conditional space's other branches hold no value), then the defaults."""
    points = [dict(m.params) for m in members if m.learner == spec.name]
    if spec.first_trial or not points:
        points.append(dict(spec.first_trial))
    unique = []
    for point in points:
        if point not in unique:
            unique.append(point)
    return unique


def first_point(spec, members) -> dict:
    """The first trial of a new study of ``spec``: its first portfolio point, else its defaults."""
    return _points(spec, members)[0]


def later_points(spec, members) -> list[dict]:
    """The points queued after the first trial: the learner's other portfolio points, then its defaults
    (when a portfolio point came first)."""
    return [p for p in _points(spec, members)[1:] if p]


def queue_later_points(study, spec, members) -> bool:
    """Queue :func:`later_points` once, after the study's first counted trial; whether that is done (now or
    before, by this or another process)."""
    from automil.tune.backend.optuna_trials import counts_toward_budget, records

    if study.user_attrs.get(PORTFOLIO_ATTR):
        return True
    trials = records(study)
    if not any(t.finished and counts_toward_budget(t) for t in trials):
        return False  # the first point comes first
    tried = [t.params for t in trials]
    for point in later_points(spec, members):
        if point not in tried:
            study.enqueue_trial(point, user_attrs={TrialAttr.PORTFOLIO: True}, skip_if_exists=True)
    study.set_user_attr(PORTFOLIO_ATTR, True)
    return True
