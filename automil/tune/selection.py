"""The one model a tuning run hands the user: the learner with the best honest figure."""

from __future__ import annotations

from automil.records import LearnerResult, Status

__all__ = ["choose"]


def choose(rows: list[LearnerResult]) -> LearnerResult | None:
    """The row of the chosen learner, or ``None`` when no learner has a usable figure.

    Candidates have status ``ok``, a headline figure (nested CV under the nested protocol) and never
    predicted one class for every bag of a headline fold. The best headline value of the run's metric
    wins; ties go to the cheaper learner (lower mean fit seconds), then to the name.
    """
    candidates = [r for r in rows if r.status == Status.OK and not r.one_class and r.metric_value() is not None]
    if not candidates:
        return None
    return min(candidates, key=lambda r: (-r.metric_value(), r.fit_seconds is None, r.fit_seconds or 0.0,
                                          r.learner))
