"""When an anytime learner's first fits, cut short by their time, stop its trial: on made-up fits."""

import numpy as np
import pytest

from automil.evaluation.folds_file import RunFolds
from automil.records import TrialAttr
from automil.tune.loop.trial_fits import CutToChance, TrialFits, cut_to_chance
from automil.tune.options import TuneOptions
from automil.tune.schedule.probe import ANYTIME_REACH
from automil.tune.studies.plan import Plan
from automil.tune.studies.trial_folds import TrialFolds

Y = np.tile([0, 1], 30)
PLAN = Plan("d", ["net"], TuneOptions(protocol="nested"), RunFolds("d", (), np.zeros(60, dtype=int), ()), start=0.0,
            chance=0.5)


def _fits(done: int, epochs: int, promising: bool = True) -> TrialFits:
    """Three fits of a trial on 60 bags, ``done`` of them cut at ``epochs`` and scoring coin flips."""
    folds = TrialFolds.cross_validation(np.repeat([0, 1, 2], 20))
    fits = TrialFits(folds, limit=10.0, promising=promising)
    fits.attrs[TrialAttr.TIME_LIMITED] = {"epochs": epochs}
    fits.attrs[TrialAttr.FIT_SECONDS] = [1.0] * done
    fits.attrs[TrialAttr.fold("balanced_accuracy")] = [0.5] * done
    return fits


def test_one_fit_at_chance_stops_the_trial_only_below_the_reach_that_keeps_a_learner_from_starting():
    reached = int(ANYTIME_REACH * 100)
    cut_to_chance(_fits(1, reached), {"epochs": 100}, PLAN, Y)  # a quarter of its epochs: one fit says too little
    with pytest.raises(CutToChance, match=f"epochs {reached - 1} of 100"):
        cut_to_chance(_fits(1, reached - 1), {"epochs": 100}, PLAN, Y)
    with pytest.raises(CutToChance, match=r"\(2 of 3 fits\)"):  # half its fits at chance stop it at any reach
        cut_to_chance(_fits(2, reached), {"epochs": 100}, PLAN, Y)


def test_one_fit_at_chance_stops_a_learner_the_portfolio_passed_over_at_any_reach():
    with pytest.raises(CutToChance, match=r"epochs 90 of 100 .*\(1 of 3 fits\)"):
        cut_to_chance(_fits(1, 90, promising=False), {"epochs": 100}, PLAN, Y)
    cut_to_chance(_fits(1, 90), {"epochs": 100}, PLAN, Y)  # a promising one waits for half its fits
