"""Survival and regression rows built by hand: their keys are their task's, and the procedure's row is
chance where a split ships nothing and has no figure of a metric chance does not define."""

import numpy as np
import pytest

from automil.endpoints import label_counts, survival_labels
from automil.evaluation.chance import chance_level, score_stderr
from automil.evaluation.metrics import FoldScores
from automil.records import LearnerResult, TrialRecord, TrialState
from automil.tune.final.leaderboard import Evaluation, Refit, procedure_row, result_row
from automil.tune.options import TuneOptions

pytestmark = pytest.mark.unit

OPTIONS = TuneOptions(folds=3, repeats=1, protocol="nested", metric="concordance", jobs=1)
# each outer split's inner scores cover 30 events and 10 censored bags
TRUTH = survival_labels(np.arange(1.0, 41.0), np.arange(40) % 4 != 0)
INNER_BAGS = [label_counts(TRUTH)] * 3


def _row(learner, inner, outer, brier):
    """A survival learner's row whose outer split ``i`` scored ``inner[i]`` (C) on its inner folds and C
    ``outer[i]``, IBS ``brier[i]`` on outer fold ``i``."""
    best = TrialRecord(0, TrialState.COMPLETE, 0.6, attrs={"estimator_params": {}})
    nested = [FoldScores(concordance=c, uno_concordance=c, integrated_brier=b) for c, b in zip(outer, brier)]
    risk = np.arange(40.0)
    return result_row("cohort", OPTIONS, Evaluation(learner, "p", f"cohort/{learner}", [best], best,
                                                    outer_best=[best] * 3, nested=nested, inner=inner,
                                                    fit_seconds=[1.0],
                                                    predictions={Refit.NESTED: [(TRUTH, risk)] * 3}))


def test_a_survival_row_holds_its_task_keys_only_and_reads_back():
    row = _row("cox", inner=[0.7, 0.7, 0.7], outer=[0.70, 0.75, 0.80], brier=[0.20, 0.18, 0.16])
    flat = row.to_dict()
    assert flat["concordance"] == pytest.approx(0.75) and flat["nested_integrated_brier"] == pytest.approx(0.18)
    assert not [key for key in flat if "accuracy" in key or "roc_auc" in key or key.endswith(("r2", "mae"))]
    assert all(set(split) >= {"concordance", "inner"} and "accuracy" not in split for split in flat["outer_splits"])
    assert LearnerResult.from_dict(flat).to_dict() == flat
    # the interval is the concordance's normal interval over the events and censored bags it scored
    stderr = score_stderr("concordance", 0.75, label_counts(np.concatenate([TRUTH] * 3)))
    assert row.headline.interval == pytest.approx([0.75 - 1.959964 * stderr, 0.75 + 1.959964 * stderr], abs=1e-4)


def test_a_split_that_ships_nothing_is_scored_as_chance_and_leaves_no_brier_figure():
    # split 1's inner C (0.52) is not above 0.5 by twice its standard error over 30 events and 10 censored
    assert 0.52 - 2 * score_stderr("concordance", 0.52, INNER_BAGS[1]) < 0.5
    rows = [_row("cox", inner=[0.8, 0.52, 0.8], outer=[0.70, 0.75, 0.80], brier=[0.20, 0.18, 0.16])]
    procedure = procedure_row(rows, INNER_BAGS)
    assert procedure.choices == ["cox", None, "cox"]
    by_hand = [0.70, chance_level("concordance", TRUTH), 0.80]
    assert procedure.headline.concordance == pytest.approx(np.mean(by_hand))
    assert procedure.headline.integrated_brier is None  # chance gives no IBS: no mean over two splits
    assert "a constant prediction" in procedure.error
