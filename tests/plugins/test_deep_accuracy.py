"""Accuracy of abmil with its defaults on the classic MIL sets (docs/deep.md), the protocol of
bench/deep_accuracy.py: 10-fold CV over bags (seed 0), accuracy of the pooled out-of-fold predictions.

Threshold: Ilse, Tomczak & Welling (2018) Table 1 less 3 points, the margin issue 26 sets. Minutes each on
2 cores, so on demand only (pytest -m slow).
"""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")

from automil import plugins  # noqa: E402

BENCH = Path(__file__).resolve().parents[2] / "bench" / "deep_accuracy.py"
_spec = importlib.util.spec_from_file_location("deep_accuracy", BENCH)
deep_accuracy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(deep_accuracy)


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["musk1", "elephant"])
def test_abmil_defaults_come_within_3_points_of_ilse_et_al(dataset, data_dir, fresh_plugins):
    fresh_plugins.setenv(plugins.LOAD_PLUGINS_ENV, "datasets,deep")
    fresh_plugins.setenv("OMP_NUM_THREADS", "1")
    bags = deep_accuracy.automil.load_bags(dataset)
    accuracy, per_fold = deep_accuracy.cv_accuracy("abmil", bags, seed=0)
    assert len(per_fold) == deep_accuracy.N_FOLDS
    paper = deep_accuracy.PAPER["abmil"][dataset]
    assert 100 * accuracy >= paper - 3, f"abmil on {dataset}: {100 * accuracy:.1f}% (paper {paper})"
