"""Accuracy of the deep learners with their defaults on the classic MIL sets (docs/deep.md), the protocol of
bench/deep_accuracy.py and of the papers: 10-fold CV over bags repeated with 5 seeds (5 to 9: the defaults
were chosen on seeds 0 and 1), accuracy of the pooled out-of-fold predictions, mean over the repeats.

Threshold: the paper's figure (Ilse, Tomczak & Welling 2018 Table 1 for abmil; Wang et al. 2018 for mi-Net
and MI-Net) less 3 points, the margin issue 26 sets. One to five minutes a cell on 2 cores (musk2 more),
so on demand only (pytest -m slow).
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from automil import plugins  # noqa: E402

BENCH = Path(__file__).resolve().parents[2] / "bench" / "deep_accuracy.py"
_spec = importlib.util.spec_from_file_location("deep_accuracy", BENCH)
deep_accuracy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(deep_accuracy)

# The cells measured more than 3 points below the paper (docs/deep.md, "Accuracy"): known misses, kept visible.
MISSES = {("abmil", "musk2"), ("abmil", "fox"), ("abmil", "tiger"), ("mi-net", "fox"), ("mi-net", "tiger")}
CELLS = [(learner, dataset) for learner in ("abmil", "mi-net", "MI-Net")
         for dataset in ("musk1", "musk2", "elephant", "fox", "tiger")]


@pytest.mark.slow
@pytest.mark.parametrize(("learner", "dataset"), [
    pytest.param(*cell, marks=pytest.mark.xfail(reason="more than 3 points below the paper", strict=False))
    if cell in MISSES else cell for cell in CELLS])
def test_deep_defaults_come_within_3_points_of_the_papers(learner, dataset, data_dir, fresh_plugins):
    fresh_plugins.setenv(plugins.LOAD_PLUGINS_ENV, "datasets,deep")
    fresh_plugins.setenv("OMP_NUM_THREADS", "1")
    bags = deep_accuracy.automil.load_bags(dataset)
    accuracy = np.mean([deep_accuracy.cv_accuracy(learner, bags, seed)[0] for seed in range(5, 10)])
    paper = deep_accuracy.PAPER[learner][dataset]
    assert 100 * accuracy >= paper - 3, f"{learner} on {dataset}: {100 * accuracy:.1f}% (paper {paper})"
