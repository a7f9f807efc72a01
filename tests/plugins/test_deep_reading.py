"""How the networks read a cohort: a cut bag as a few contiguous runs of rows inside it, the next batch read
in a thread (the same batches in the same order as without it), and float16 instances upcast to float32."""

import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from automil.checks import witness_bags  # noqa: E402 - after the skip: the plugin's tests need torch
from automil.row_runs import RUNS, run_positions  # noqa: E402
from automil.streamed_bags import StreamedBags  # noqa: E402
from automil_deep.estimators import ABMILClassifier  # noqa: E402
from automil_deep.networks import ABMIL  # noqa: E402
from automil_deep.reading import prefetched  # noqa: E402
from automil_deep.training import Batches, matrix_rows  # noqa: E402

FAST = {"hidden": 16, "epochs": 3, "batch_size": 4, "validation_fraction": 0.0, "random_state": 0}


def runs_of(positions: np.ndarray) -> int:
    """Contiguous runs in increasing positions."""
    return int(np.count_nonzero(np.diff(positions) != 1)) + 1


def rows_cohort(sizes):
    """Bags whose only feature is each instance's row number, and their offsets."""
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    return np.arange(offsets[-1], dtype=np.float32)[:, None], offsets


@pytest.mark.parametrize(("size", "count", "runs"), [(10_000, 512, RUNS), (300, 100, 3), (50, 49, 8), (9, 4, 8)])
def test_a_cut_bag_is_drawn_as_its_windows_inside_the_bag_every_instance_as_often(size, count, runs):
    rng = np.random.default_rng(0)
    drawn = np.zeros(size, dtype=np.int64)
    for _ in range(400):
        positions = run_positions(size, count, rng, runs)
        assert len(positions) == count and np.all(np.diff(positions) > 0)  # distinct, in order
        assert positions[0] >= 0 and positions[-1] < size
        assert runs_of(positions) <= runs + 1  # one window may wrap past the bag's end
        drawn[positions] += 1
    # every instance drawn, a tenth of the bag at its two ends about as often as any (count / size of the steps)
    ends = np.concatenate((drawn[:max(1, size // 20)], drawn[-max(1, size // 20):]))
    assert drawn.min() > 0 and abs(ends.mean() / (400 * count / size) - 1) < 0.25
    assert np.array_equal(run_positions(size, size + 3, rng), np.arange(size))  # a bag under the cap: all of it


def test_the_runs_drawn_follow_the_seed():
    first = [run_positions(5_000, 512, np.random.default_rng(7)) for _ in range(2)]
    other = run_positions(5_000, 512, np.random.default_rng(8))
    assert np.array_equal(*first) and not np.array_equal(first[0], other)


def test_a_training_batch_reads_each_cut_bag_as_its_windows_of_contiguous_rows():
    sizes = np.array([3000, 40, 2500, 700, 5000, 12])
    rows, offsets = rows_cohort(sizes)
    batches = Batches(matrix_rows(rows, offsets), sizes, 1)
    for part, X, mask in batches.training_batches(np.arange(len(sizes)), 2, 256, np.random.default_rng(0)):
        for bag, x, m in zip(part, X[..., 0].numpy(), mask.numpy(), strict=True):
            drawn = x[m].astype(np.int64)
            assert len(drawn) == min(sizes[bag], 256)
            assert offsets[bag] <= drawn.min() and drawn.max() < offsets[bag + 1]
            assert runs_of(drawn) <= RUNS + 1  # RUNS windows, one of which may wrap past the end


def epochs_of_batches(prefetch: int, seed: int = 3):
    """Three epochs of training batches and a pass of capped prediction batches over uneven bags."""
    sizes = np.random.default_rng(0).integers(1, 90, size=60)
    rows, offsets = rows_cohort(sizes)
    batches = Batches(matrix_rows(rows, offsets), sizes, 1, prefetch=prefetch)
    rng = np.random.default_rng(seed)
    seen = [(part.tolist(), X.numpy().copy(), mask.numpy().copy())
            for _ in range(3) for part, X, mask in batches.training_batches(np.arange(60), 4, 16, rng)]
    return seen + [(part.tolist(), X.numpy().copy(), mask.numpy().copy())
                   for part, X, mask in batches.prediction_batches(np.arange(60), 24)]


def test_batches_read_ahead_are_the_batches_read_when_asked_for_in_the_same_order():
    ahead, asked, other = epochs_of_batches(prefetch=1), epochs_of_batches(prefetch=0), epochs_of_batches(0, seed=4)
    assert len(ahead) == len(asked)
    for (part, X, mask), (part_asked, X_asked, mask_asked) in zip(ahead, asked, strict=True):
        assert part == part_asked and np.array_equal(X, X_asked) and np.array_equal(mask, mask_asked)
    assert [part for part, _, _ in other] != [part for part, _, _ in asked]  # the seed does decide them


def test_the_next_item_is_produced_while_the_caller_holds_this_one_and_no_further_ahead():
    produced, second_made = [], threading.Event()

    def items():
        for item in range(6):
            produced.append(item)
            if item == 1:
                second_made.set()
            yield item

    received = 0
    for item in prefetched(items(), depth=1):
        received += 1
        assert item == received - 1
        assert len(produced) <= received + 1  # at most one item ahead of the caller
        if item == 0:  # read ahead: made while the caller still works on item 0
            assert second_made.wait(timeout=60)
    assert produced == list(range(6))


def test_an_error_producing_an_item_is_raised_in_its_place_and_stopping_early_closes_the_source():
    def failing():
        yield 1
        raise KeyError("bag 7")

    with pytest.raises(KeyError, match="bag 7"):
        list(prefetched(failing()))
    closed = threading.Event()

    def endless():
        try:
            yield from iter(int, 1)  # zeros, without end
        finally:
            closed.set()

    reader = prefetched(endless())
    assert next(reader) == 0
    reader.close()  # returns once the producing thread has ended
    assert closed.is_set()
    assert not [thread for thread in threading.enumerate() if thread.name == "automil-deep-prefetch"]


class Inputs(torch.nn.Module):
    """ABMIL recording the dtype of every batch it is given."""

    dtypes: list = []

    def __init__(self, *args):
        super().__init__()
        self.network = ABMIL(*args)

    def forward(self, X, mask):
        Inputs.dtypes.append(X.dtype)
        return self.network(X, mask)


class InputsABMIL(ABMILClassifier):
    def _network(self, n_features, n_classes):
        return Inputs(n_features, n_classes, self.hidden, self.dropout, self.gated)


def test_float16_instances_are_read_into_float32_batches():
    sizes = np.array([5, 9, 2])
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    X16 = np.random.default_rng(0).standard_normal((offsets[-1], 3)).astype(np.float16)
    part, X, mask = next(iter(Batches(matrix_rows(X16, offsets), sizes, 3).prediction_batches(np.arange(3))))
    assert X.dtype == torch.float32
    for row, bag in enumerate(part):
        assert np.array_equal(X[row][mask[row]].numpy(), X16[offsets[bag]:offsets[bag + 1]].astype(np.float32))


def test_a_network_trains_and_predicts_on_a_float16_run_file_as_on_its_values_in_float32(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    bags = witness_bags(16)
    values = bags.X.astype(np.float16)
    wide = bags.with_instances(values.astype(np.float32))
    # the run's file kept float16, its bags streamed to the network as a run's fit gets them, never gathered
    run_file = bags.with_instances(values).mapped(tmp_path / "instances.npy")
    assert run_file.X.dtype == np.float16
    half = StreamedBags(run_file)
    Inputs.dtypes = []
    from_half = InputsABMIL(max_instances=3, **FAST).fit(half)
    assert Inputs.dtypes and set(Inputs.dtypes) == {torch.float32}
    from_wide = InputsABMIL(max_instances=3, **FAST).fit(wide)
    assert np.array_equal(from_half.predict_proba(half), from_wide.predict_proba(wide))
