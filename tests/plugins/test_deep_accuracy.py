"""Accuracy of the deep learners with their defaults on the classic MIL sets (docs/deep.md), the protocol of
experiments/deep_accuracy.py and of the papers: 10-fold CV over bags repeated with 5 seeds (5 to 9: the defaults
were chosen on seeds 0 and 1), accuracy of the pooled out-of-fold predictions, mean over the repeats.

Threshold: the paper's figure (Ilse, Tomczak & Welling 2018 Table 1 for abmil; Wang et al. 2018 for mi-Net
and MI-Net) less 3 points, the margin issue 26 sets; the cells measured below that carry a floor from their
own measurement (FLOORS), so every cell fails on a regression. One to five minutes a cell on 2 cores (musk2
more), so on demand only (pytest -m slow).
"""

import numpy as np
import pytest

pytest.importorskip("torch")

import automil  # noqa: E402
from automil import plugins  # noqa: E402
from automil.evaluation.cross_validation import cross_validated_predictions  # noqa: E402

# The cells whose measured mean (+- sd over seeds 5 to 9, the seeds this test runs) less 2 standard errors of
# a mean of 5 repeats (2 sd / sqrt(5)) falls below the paper less 3 points: that is their floor. The run is
# seeded, so the margin only covers another machine's arithmetic (BLAS, CPU) taking training down another
# path, which moves a cell by at most what another seed does. Measured with
# `OMP_NUM_THREADS=1 python experiments/deep_accuracy.py --learners abmil mi-net --datasets fox tiger
# --seeds 5 6 7 8 9` on 2026-12-04 (after early stopping waited for min_epochs and the loss was balanced);
# all four are now within 3 points of the paper, where docs/accuracy-deep.md's older table had them below.
# mi-net on fox (59.7 +- 1.4, paper 61.3) clears the paper less 3 by 2 standard errors: no floor.
FLOORS = {
    ("abmil", "musk2"): 76.9,  # 81.2 +- 4.7 (paper 85.8), docs/accuracy-deep.md: not measured again (an hour)
    ("abmil", "fox"): 56.1,  # 58.9 +- 3.1 (paper 61.5)
    ("abmil", "tiger"): 80.3,  # 82.0 +- 1.8 (paper 83.9)
    ("mi-net", "tiger"): 79.0,  # 80.4 +- 1.5 (paper 82.4)
}
CELLS = [(learner, dataset) for learner in ("abmil", "mi-net", "MI-Net")
         for dataset in ("musk1", "musk2", "elephant", "fox", "tiger")]


@pytest.mark.slow
@pytest.mark.parametrize(("learner", "dataset"), CELLS)
def test_deep_defaults_come_within_3_points_of_the_papers_or_above_their_measured_floor(learner, dataset,
                                                                                       data_dir, fresh_plugins):
    fresh_plugins.setenv(plugins.LOAD_PLUGINS_ENV, "datasets,deep")
    fresh_plugins.setenv("OMP_NUM_THREADS", "1")
    bags = automil.load_bags(dataset)
    accuracy = np.mean([_pooled_accuracy(learner, bags, seed) for seed in range(5, 10)])
    paper = automil.get_learner(learner).published.accuracy[dataset]
    floor = FLOORS.get((learner, dataset), paper - 3)
    assert 100 * accuracy >= floor, f"{learner} on {dataset}: {100 * accuracy:.1f}% < {floor}% (paper {paper})"


def _pooled_accuracy(learner: str, bags, seed: int) -> float:
    """Accuracy of the pooled out-of-fold predictions of 10-fold CV; the seed sets folds and learner alike."""
    predicted, _, _ = cross_validated_predictions(automil.get_learner(learner).build(random_state=seed), bags, 10, seed)
    return float(np.mean(predicted == bags.y))
