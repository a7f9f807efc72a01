"""The cost checks of a learner's first trial on all the bags, before it spends its fair share: what its shipped
fit cost predicts, then on large data its defaults fitted on two small samples of bags, so that defaults that
cannot finish within their share are stopped at once or in seconds, not at the end of their share
(``docs/scale.md``, "Knowing a learner's cost before spending its share")."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from automil.evaluation.folds import bag_sample
from automil.tune.schedule.ladder import estimated_trial_seconds
from automil.tune.schedule.probe import PROBE_FRACTIONS, PROBE_GROWTH, beyond_prior, over_share, probe_limits
from automil.tune.studies.plan import Plan
from automil.tune.workers.fits import fit_predict
from automil.tune.workers.isolation import FitError, FitTimeout

__all__ = ["TooSlow", "Estimate", "probe_estimate", "check_estimate"]


class TooSlow(Exception):
    """The learner's defaults, estimated from fits on samples of bags, would not finish within its share."""

    def __init__(self, seconds: float, share: float, measured: str, left: bool = False):
        room = f"the {share:.0f} s left of the tuning" if left else f"their fair share of {share:.0f} s"
        super().__init__(f"too slow (estimated {seconds:.0f} s): its defaults would need about {seconds:.0f} s "
                         f"on all folds, more than {room} ({measured}); raise --timeout")
        self.seconds = seconds


class Estimate(NamedTuple):
    """A trial's estimated ``seconds`` on all folds and what they were extrapolated from (``measured``)."""

    seconds: float
    measured: str


def probe_estimate(spec, params: dict, bags, worker, share: float, splits: list, seed: int) -> Estimate | None:
    """Fit the defaults on two samples of the first fold's training bags (whole bags, stratified) and
    extrapolate to the trial's fits on ``splits``
    (:func:`~automil.tune.schedule.ladder.estimated_trial_seconds`). A sample's fit passing its small time limit
    (:func:`~automil.tune.schedule.probe.probe_limits` of ``share``) gives a lower bound, a linear
    extrapolation of that limit. A warm-up fit on two bags of each class comes first and is not timed: the
    first fit of a learner in a worker carries one-time costs (imports, compilation) that would pass for the
    cost of the sample. A growth measured between the two samples (a factor 2 apart, their fits' iterations
    varying) is kept at most ``PROBE_GROWTH``; a learner that grows faster declares it. ``None`` when the
    warm-up passes its limit or a probe fit fails: that says nothing about the cost."""
    train = np.asarray(splits[0][0])
    full = int(bags.sizes[train].sum())
    # nested samples: two bags of each class (the warm-up), then one per PROBE_FRACTIONS entry
    warm_up, *samples = (bag_sample(bags.y, train, f, seed) for f in (0.0, *PROBE_FRACTIONS))
    warm_up_limit, *limits = probe_limits(share)
    try:
        worker.call(fit_predict, spec.name, params, warm_up, None, seed, timeout=warm_up_limit)
    except (FitTimeout, FitError):
        return None
    sizes, seconds = [], []
    for sample, limit in zip(samples, limits, strict=True):
        size = int(bags.sizes[sample].sum())
        try:
            out = worker.call(fit_predict, spec.name, params, sample, None, seed, timeout=limit)
        except FitTimeout:  # no fit grows slower than linearly: the limit extrapolated so is a lower bound
            return Estimate(estimated_trial_seconds([size], [limit], full, len(splits), growth=1.0),
                            f"a fit on {len(sample)} bags ran {limit:.1f} s without finishing")
        except FitError:
            return None
        sizes.append(size)
        seconds.append(out.fit_seconds)
    return Estimate(estimated_trial_seconds(sizes, seconds, full, len(splits), spec.fit_growth, PROBE_GROWTH),
                    ", ".join(f"{t:.2f} s on {n} instances" for n, t in zip(sizes, seconds, strict=True)))


def check_estimate(spec, params: dict, plan: Plan, bags, worker, share: float, splits: list,
                   left: float = float("inf"), predicted: Estimate | None = None, probe: bool = True,
                   promising: bool = True) -> float | None:
    """The :func:`probe_estimate` of the trial (with ``probe``), in seconds (``None``: none, the trial goes on
    as usual); raises ``TooSlow`` when it passes ``share``, or the seconds ``left`` before the tuning deadline
    when fewer (a trial the deadline would cut leaves no figure), by more than the probe's own error, or for a
    learner not ``promising`` at all (:func:`~automil.tune.schedule.probe.over_share`). First, before any fit,
    an estimate ``predicted`` before the trial (from the learner's rungs or its shipped fit cost) raises
    ``TooSlow`` when beyond that limit by more than its own error
    (:func:`~automil.tune.schedule.probe.beyond_prior`): a share too small for the learner costs nothing."""
    limit = min(share, left)
    if predicted is not None and beyond_prior(predicted.seconds, limit, spec.anytime):
        raise TooSlow(predicted.seconds, limit, predicted.measured, left=left < share)
    if not probe:
        return None
    estimate = probe_estimate(spec, params, bags, worker, share, splits, plan.options.seed)
    if estimate is not None and over_share(estimate.seconds, limit, promising):
        raise TooSlow(estimate.seconds, limit, estimate.measured, left=left < share)
    return None if estimate is None else estimate.seconds
