"""A trial's fits: what they train and score on, what they produced so far, and when they must stop (its
learner's fair share, moved on by the trial's own estimates) or why they were stopped."""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field

import numpy as np

from automil.endpoints import TASK_METRICS, label_counts, task_of
from automil.evaluation.chance import above_chance, score_stderr
from automil.evaluation.metrics import mean_std, one_class
from automil.records import TrialAttr
from automil.tune.loop.cost_probe import TooSlow
from automil.tune.schedule.probe import ANYTIME_REACH, over_share, share_allowed
from automil.tune.studies.plan import Plan
from automil.tune.studies.trial_folds import TrialFolds
from automil.tune.workers.isolation import FitTimeout

__all__ = ["TrialFits", "CutToChance", "beyond_share", "cut_to_chance", "timeout_attrs", "OVERRUN_MARGIN",
           "ONE_CLASS_FOLD_BAGS"]

# How much less again a fit is told after an anytime fit of its trial ran past its time: the overrun varies
# with the machine's load from one fit to the next.
OVERRUN_MARGIN = 0.1
# The fewest test bags of one fit that tell by themselves a model giving every bag one class (its trial is then
# stopped before its other fits). Fewer cannot tell: a model that calls 70% of bags positive gives every bag of
# a fold of 5 that class with probability 0.7^5 = 0.17, so one of 6 such folds does with probability 0.67;
# a fold of 50 bags does with probability 0.9^50 < 1% for a model that calls 90% of bags one class. A
# trial whose folds are smaller is judged on all the bags it scored, once its fits are in.
ONE_CLASS_FOLD_BAGS = 50


@dataclass
class TrialFits:
    """A trial's fits and blocks (on a rung: samples of their training bags) and what they produced so far."""

    folds: TrialFolds
    limit: float
    metrics: tuple[str, ...] = TASK_METRICS["classification"]  # what every block is scored with: the task's
    rung: float | None = None
    share: float | None = None  # the learner's own fair share that stops the trial (a defaults trial on all bags)
    started: float = 0.0  # time.time() at the trial's start
    stop: float = np.inf  # when the trial's fits must end: the share's end, or later within its estimate's error
    attrs: dict = field(default_factory=lambda: {
        TrialAttr.FIT_SECONDS: [], TrialAttr.PREDICT_SECONDS: [], TrialAttr.TIMED_OUT: False,
        TrialAttr.ONE_CLASS: False})
    oof_scores: list = field(default_factory=list)
    predictions: list = field(default_factory=list)  # every fit's predicted labels so far, in fit order
    overrun: float = 1.0  # the most an anytime fit so far ran past the time it was told, as a ratio
    first_result: bool = False  # the learner's first trial on all the bags: fits cut short at chance stop it
    promising: bool = True  # the estimates' doubt and the half rule are its (probe.called_promising)

    def __post_init__(self):
        self.attrs |= {TrialAttr.fold(metric): [] for metric in self.metrics}
        if self.rung is not None:
            self.attrs[TrialAttr.RUNG] = self.rung

    def time_for_fit(self, k: int, left: float) -> float:
        """The time fit ``k`` of an anytime learner is told (:func:`automil.time_left`): its part of the
        ``left`` seconds, less what earlier fits ran past theirs. Why: its last fit's time is also its
        kill, so one that runs past it loses the whole trial (MIRF on a busy machine: 7% past, two of three
        fits done, killed in the third at the tuning deadline)."""
        part = left / (len(self.folds.fits) - k)
        return part if self.overrun <= 1.0 else part / (self.overrun * (1 + OVERRUN_MARGIN))

    def one_class(self, y, fold: str) -> str | None:
        """The bags the trial's fits so far gave one class every one (``fold`` names the last fit's test
        bags), where they can tell a model that does so: the last fit's, when they are
        ``ONE_CLASS_FOLD_BAGS`` or more, else, once every fit is in, all the bags the fits scored (out of
        fold); ``None``: not shown. A survival or regression fit that gives every one of its bags the same risk
        or value is told by its own fold, whatever its size (a continuous prediction is the same twice only when
        the model ignores the bags)."""
        y, done = np.asarray(y), len(self.predictions)
        test = self.folds.fits[done - 1][1]
        if task_of(y) != "classification":  # a risk or a value: one for every bag is a fit that ignores them
            return f"{fold} ({len(test)} bags)" if one_class(y[test], self.predictions[-1]) else None
        if len(test) >= ONE_CLASS_FOLD_BAGS and one_class(y[test], self.predictions[-1]):
            return f"{fold} ({len(test)} bags)"
        if done == len(self.folds.fits) and one_class(y[self.folds.order], np.concatenate(self.predictions)):
            return f"the {len(self.folds.order)} bags its {done} fit{'s' * (done > 1)} scored"
        return None

    def ran(self, told: float, seconds: float):
        """Note that an anytime fit told ``told`` seconds took ``seconds`` (fit and prediction)."""
        self.overrun = max(self.overrun, seconds / told)

    def allow(self, more: float | None, deadline: float):
        """Move the stop to what the learner's share allows a trial whose fits need about ``more`` seconds
        from now (:func:`~automil.tune.schedule.probe.share_allowed`), never past the tuning ``deadline``."""
        if self.share is not None and more is not None:
            estimate = time.time() - self.started + more
            self.stop = max(self.stop, min(self.started + share_allowed(estimate, self.share, self.promising),
                                           deadline))


def beyond_share(fits: TrialFits, deadline: float):
    """Raise :class:`TooSlow` when the trial's fits so far, at their mean seconds (fit and prediction), say
    that all its fits would pass its learner's fair share by more than a cost estimate's error
    (:func:`~automil.tune.schedule.probe.over_share`, the probe's rule); when they say it would pass the
    share by less, the trial may run to that error's bound (:meth:`TrialFits.allow`). Why: the share would stop
    the last of them anyway, and the seconds until then would buy no figure; a first fit carries one-time
    costs, so an estimate just over the share may still end within it, and where it does not, a stop at the
    share would waste every second the trial took (miGraph at 10^5 instances: two of three fits of 61 s
    done, killed in the third at its share of 190 s)."""
    done = len(fits.attrs[TrialAttr.FIT_SECONDS])
    left = len(fits.folds.fits) - done
    if fits.share is None or not left:
        return
    each = float(np.mean(fits.attrs[TrialAttr.FIT_SECONDS]) + np.mean(fits.attrs[TrialAttr.PREDICT_SECONDS]))
    estimate = time.time() - fits.started + left * each
    if over_share(estimate, fits.share, fits.promising):
        raise TooSlow(estimate, fits.share, f"{done} of {done + left} fits done, {each:.1f} s each")
    fits.allow(left * each, deadline)


class CutToChance(TooSlow):
    """The learner's first fits on all the bags ran out of their time and what they scored is chance."""

    def __init__(self, seconds: float | None, reached: str, scored: str):
        Exception.__init__(self, "too slow for the budget: " + (
            "" if seconds is None else f"its defaults would need about {seconds:.0f} s on all folds; ")
            + f"its fits ran out of time at {reached} and scored {scored}; raise --timeout")
        self.seconds = seconds


def cut_to_chance(fits: TrialFits, params: dict, plan: Plan, y, estimator=None):
    """Raise :class:`CutToChance` when the trial's fits so far ran out of their time short of their own end (an
    anytime learner's, ``time_limited``), at least half of them, or any that reached less than ``ANYTIME_REACH``
    of its work or of a learner not called promising (``TrialFits.promising``), and what they scored is not
    above chance by twice its standard error over the bags they scored. Why: at what its share affords, the
    learner learns nothing of these bags; the fits still to come are given as little, and the final
    evaluation's refit, cut as short, would buy no figure (TransMIL at 10^5 instances: 1 of 50 epochs in its
    share, BACC 0.51; MIRF: 49 of 100 trees, 0.49; on a cohort of 265 slides, TransMIL's six fits took 100 s
    for AUC 0.41). Why one fit suffices below ``ANYTIME_REACH``: that is what keeps such a learner from
    starting at all; and for a learner the portfolio passed over: no prior says the others would differ. The
    estimate scales the trial's seconds by how far its fits fell short of ``params`` (the trial's estimator
    parameters, else ``estimator``'s defaults) where those name the parameter, and by the fits still to make."""
    limited, metric = fits.attrs.get(TrialAttr.TIME_LIMITED), plan.options.metric
    done = len(fits.attrs[TrialAttr.FIT_SECONDS])
    score, _ = mean_std(fits.attrs.get(TrialAttr.fold(metric)) or [])
    if not limited or plan.chance is None or fits.rung is not None or score is None:
        return
    params = {**_defaults(estimator), **params}
    named = {name: value for name, value in limited.items()
             if _count(params.get(name)) and _count(value) and 0 < value < params[name]}
    short = max((params[name] / value for name, value in named.items()), default=None)
    if fits.promising and 2 * done < len(fits.folds.fits) and (short is None or short * ANYTIME_REACH <= 1):
        return
    scored = np.concatenate([test for _, test in fits.folds.fits[:done]])
    counts = label_counts(np.asarray(y)[scored])
    if above_chance(score, score_stderr(metric, score, counts), plan.chance):
        return
    reached = ", ".join(f"{name} {value} of {params[name]}" for name, value in named.items()) or \
        ", ".join(f"{name} {value}" for name, value in limited.items())
    whole = (time.time() - fits.started) * len(fits.folds.fits) / done
    raise CutToChance(None if short is None else whole * short, reached,
                      f"{metric} {score:.2f}, not above chance {plan.chance:.2f} by twice its standard error "
                      f"over the {len(scored)} bags scored ({done} of {len(fits.folds.fits)} fits)")


def _defaults(estimator) -> dict:
    """The keyword defaults of ``estimator``'s constructor (none when it has no signature to read)."""
    try:
        signature = inspect.signature(estimator)
    except (TypeError, ValueError):
        return {}
    return {name: p.default for name, p in signature.parameters.items() if p.default is not inspect.Parameter.empty}


def _count(value) -> bool:
    """Whether ``value`` is a number of something (epochs, trees, iterations): a number, not a flag."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def timeout_attrs(error: FitTimeout, fits: TrialFits, plan: Plan, fair_share: float | None) -> dict:
    """Why a fit was stopped: its learner's ``fair_share`` (too slow; not counted, a larger budget tries
    again), the run's budget (not the learner's fault), or ``--fit-timeout``."""
    if fits.limit < plan.options.fit_timeout and fair_share is not None:
        done = fits.attrs[TrialAttr.FIT_SECONDS]
        measured = (f"{len(done)} of {len(fits.folds.fits)} fits done, {np.mean(done):.1f} s each" if done
                    else f"its first fit ran {fits.limit:.1f} s without finishing")
        if fits.stop - fits.started > fair_share + 1:  # the trial's estimate had let it run on
            measured += f", allowed {fits.stop - fits.started:.0f} s by its estimate"
        return {TrialAttr.INTERRUPTED: True, TrialAttr.TOO_SLOW: True,
                TrialAttr.ERROR: f"too slow for the budget: its defaults did not finish within their fair share "
                                 f"of {fair_share:.0f} s ({measured}); raise --timeout"}
    if fits.limit < plan.options.fit_timeout:
        return {TrialAttr.INTERRUPTED: True,
                TrialAttr.ERROR: f"stopped after {fits.limit:.0f} s by the --timeout budget"}
    return {TrialAttr.TIMED_OUT: True, TrialAttr.ERROR: f"{error} (--fit-timeout {fits.limit:g} s)"}
