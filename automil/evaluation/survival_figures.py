"""The Kaplan-Meier curves of held-out patients split at the training folds' median risk, with the log-rank test
between the two groups: what a survival run shows beside its concordance (a C says the ranking is right; the
curves say how far apart the survival of the patients called high and low risk really is). No fit of a
learner: labels and risks in, curves out; :func:`automil.track.writing.figures.kaplan_meier_figure` draws them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SurvivalCurve", "KaplanMeierSplit", "kaplan_meier_split", "GROUPS"]

GROUPS = ("low risk", "high risk")  # at or below the cut, above it


@dataclass(frozen=True)
class SurvivalCurve:
    """One group's Kaplan-Meier estimate: the survival probability after each distinct time of the group
    (``time`` ascending, ``survival`` non-increasing), the times of its censored patients, and its counts."""

    group: str
    patients: int
    events: int
    time: np.ndarray
    survival: np.ndarray
    censored: np.ndarray

    def at(self, times) -> np.ndarray:
        """The curve's survival probability at ``times`` (1 before its first time)."""
        index = np.searchsorted(self.time, np.asarray(times, dtype=np.float64), side="right")
        return np.r_[1.0, self.survival][index]


@dataclass(frozen=True)
class KaplanMeierSplit:
    """The held-out patients' two groups and the log-rank test between them; ``chi2`` and ``p_value`` are
    ``None`` when there is nothing to test (a group is empty, or no patient has an event)."""

    low: SurvivalCurve
    high: SurvivalCurve
    chi2: float | None
    p_value: float | None


def kaplan_meier_split(time, event, risk, cut) -> KaplanMeierSplit:
    """Split the held-out patients at ``cut`` (a number, or one per patient: each outer fold's own training
    folds' median risk, so that no patient's group depends on its own fold), a patient of risk above it being
    high risk, and estimate each group's Kaplan-Meier curve; the log-rank test is scikit-survival's
    ``compare_survival``. Raises ``ValueError`` naming the first bad position (negative or NaN time, an
    event not 0/1) or a length that differs."""
    from sksurv.compare import compare_survival
    from sksurv.util import Surv

    time, event, risk = (np.asarray(a, dtype=np.float64).ravel() for a in (time, event, risk))
    cut = np.broadcast_to(np.asarray(cut, dtype=np.float64), risk.shape) if np.ndim(cut) == 0 else \
        np.asarray(cut, dtype=np.float64).ravel()
    if not len(time) == len(event) == len(risk) == len(cut):
        raise ValueError(f"time, event, risk and cut must have one entry a patient, got lengths {len(time)}, "
                         f"{len(event)}, {len(risk)} and {len(cut)}")
    for values, what in ((time, "time is negative or missing"), (risk, "risk is not finite"),
                         (cut, "cut is not finite")):
        bad = ~np.isfinite(values) | (values < 0 if what.startswith("time") else False)
        if bad.any():
            raise ValueError(f"patient {int(np.flatnonzero(bad)[0])}: {what} ({values[bad][0]})")
    bad = ~np.isin(event, (0, 1))
    if bad.any():
        raise ValueError(f"patient {int(np.flatnonzero(bad)[0])}: event must be 0 or 1, got {event[bad][0]}")
    event = event.astype(bool)
    high = risk > cut
    low_curve, high_curve = (_curve(name, time[part], event[part]) for name, part in zip(GROUPS, (~high, high)))
    if not (high.any() and (~high).any() and event.any()):
        return KaplanMeierSplit(low_curve, high_curve, None, None)
    chi2, p_value = compare_survival(Surv.from_arrays(event, time), high.astype(int))[:2]
    return KaplanMeierSplit(low_curve, high_curve, float(chi2), float(p_value))


def _curve(group: str, time: np.ndarray, event: np.ndarray) -> SurvivalCurve:
    """The group's Kaplan-Meier estimate (scikit-survival's ``kaplan_meier_estimator``); an empty group has
    no steps."""
    from sksurv.nonparametric import kaplan_meier_estimator

    if len(time) == 0:
        steps, survival = np.empty(0), np.empty(0)
    else:
        steps, survival = kaplan_meier_estimator(event, time)
    return SurvivalCurve(group, len(time), int(event.sum()), np.asarray(steps, dtype=np.float64),
                         np.asarray(survival, dtype=np.float64), np.sort(time[~event]))
