"""Accuracy of abmil with its defaults on the classic MIL sets (docs/deep.md), the protocol of
bench/deep_accuracy.py and of the paper: 10-fold CV over bags repeated with 5 seeds, accuracy of the pooled
out-of-fold predictions, mean over the repeats.

Threshold: Ilse, Tomczak & Welling (2018) Table 1 less 3 points, the margin issue 26 sets. About five
minutes a set on 2 cores, so on demand only (pytest -m slow).
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

# musk1 measured 85.9 +- 3.4, 3.3 points below the paper's 89.2 (docs/deep.md): a known miss, kept visible.
MISSES = {"musk1"}


@pytest.mark.slow
@pytest.mark.parametrize("dataset", [
    pytest.param(name, marks=pytest.mark.xfail(reason="3.3 points below the paper", strict=False))
    if name in MISSES else name for name in ("musk1", "elephant")])
def test_abmil_defaults_come_within_3_points_of_ilse_et_al(dataset, data_dir, fresh_plugins):
    fresh_plugins.setenv(plugins.LOAD_PLUGINS_ENV, "datasets,deep")
    fresh_plugins.setenv("OMP_NUM_THREADS", "1")
    bags = deep_accuracy.automil.load_bags(dataset)
    accuracy = np.mean([deep_accuracy.cv_accuracy("abmil", bags, seed)[0] for seed in range(5)])
    paper = deep_accuracy.PAPER["abmil"][dataset]
    assert 100 * accuracy >= paper - 3, f"abmil on {dataset}: {100 * accuracy:.1f}% (paper {paper})"
