"""The deep learners at scale: a training step sees at most ``max_instances`` of a bag (prediction all of
them), batches of bags of similar size, the device they train on, on a machine without a GPU, and streamed
folds read a batch at a time with the gathered fold's figures."""

import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import automil  # noqa: E402 - after the skip: the plugin's tests need torch
from automil import streamed_bags  # noqa: E402
from automil.checks import witness_bags  # noqa: E402
from automil.evaluation.standardized import Standardized  # noqa: E402
from automil.streamed_bags import StreamedBags  # noqa: E402
from automil_deep import training  # noqa: E402
from automil_deep.estimators import ABMILClassifier, DSMILClassifier  # noqa: E402
from automil_deep.networks import ABMIL  # noqa: E402
from automil_deep.training import Batches, matrix_rows, resolve_device  # noqa: E402

FAST = {"hidden": 16, "epochs": 4, "batch_size": 4, "validation_fraction": 0.0, "random_state": 0}
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without CUDA")


class Seen(torch.nn.Module):
    """ABMIL that records, at every forward pass, whether it trains, each bag's instances and the threads."""

    calls: list = []
    inputs: list = []

    def __init__(self, *args):
        super().__init__()
        self.network = ABMIL(*args)

    def forward(self, X, mask):
        Seen.calls.append((self.training, mask.sum(dim=1).tolist(), torch.get_num_threads()))
        Seen.inputs.append((self.training, X.sum(dim=(1, 2)).tolist()))  # which instances, in short
        return self.network(X, mask)


class SeenABMIL(ABMILClassifier):
    def _network(self, n_features, n_classes):
        return Seen(n_features, n_classes, self.hidden, self.dropout, self.gated)


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # a fit worker's share on a loaded machine
    Seen.calls, Seen.inputs = [], []


def test_a_training_step_sees_at_most_max_instances_of_a_bag_and_prediction_sees_all():
    train, test = witness_bags(10), witness_bags(6, seed=1)
    model = SeenABMIL(max_instances=4, **{**FAST, "validation_fraction": 0.2, "patience": 2}).fit(train)
    training = [size for trains, sizes, _ in Seen.calls if trains for size in sizes]
    held_out = [sorted(sizes) for trains, sizes, _ in Seen.calls if not trains]
    assert max(training) == 4 and max(np.diff(train.offsets)) > 4  # the larger bags were cut, to 4
    assert len(training) == (len(model.validation_loss_) * 16 + model.n_epochs_ * 20)  # each bag once an epoch
    # early stopping's held-out bags (fold 0 of 5, as the estimator draws them), all below 4 x max_instances,
    # keep every instance
    seed = int(np.random.SeedSequence(FAST["random_state"]).generate_state(1)[0])
    validation = np.flatnonzero(automil.bag_folds(train.y, 5, seed) == 0)
    assert max(np.diff(train.offsets)[validation]) > 4
    assert held_out == [sorted(np.diff(train.offsets)[validation])] * len(model.validation_loss_)
    Seen.calls = []
    model.predict(test)
    assert sorted(size for _, sizes, _ in Seen.calls for size in sizes) == sorted(np.diff(test.offsets))


def test_early_stopping_scores_its_held_out_bags_on_the_same_capped_sample_every_epoch():
    train = witness_bags(10)
    cap = training.VALIDATION_FACTOR * 1  # max_instances=1: the held-out bags of 5 and 6 instances are cut to 4
    model = SeenABMIL(max_instances=1, **{**FAST, "epochs": 3, "min_epochs": 3, "validation_fraction": 0.2}).fit(train)
    seed = int(np.random.SeedSequence(FAST["random_state"]).generate_state(1)[0])
    sizes = np.diff(train.offsets)[np.flatnonzero(automil.bag_folds(train.y, 5, seed) == 0)]
    assert sizes.max() > cap
    held_out = [sorted(sizes) for trains, sizes, _ in Seen.calls if not trains]
    assert held_out == [sorted(np.minimum(sizes, cap))] * len(model.validation_loss_) and len(held_out) == 3
    samples = [sorted(x) for trains, x in Seen.inputs if not trains]
    assert samples[0] == samples[1] == samples[2]  # the same instances each epoch: their losses compare
    Seen.calls = []
    model.predict(train)
    assert sorted(size for _, sizes, _ in Seen.calls for size in sizes) == sorted(np.diff(train.offsets))


def test_a_prediction_batch_of_a_network_quadratic_in_its_bags_holds_a_bounded_number_of_instance_pairs(
        monkeypatch):
    sizes = np.array([5, 40, 3, 40, 12, 7, 40, 2])
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    X = np.arange(offsets[-1] * 2, dtype=np.float64).reshape(-1, 2)
    monkeypatch.setattr(training, "PREDICT_PAIRS", 40 ** 2 + 12 ** 2)
    cells = [part for part, _, _ in Batches(matrix_rows(X, offsets), sizes, 2).prediction_batches(np.arange(8))]
    pairs = [part for part, _, _ in Batches(matrix_rows(X, offsets), sizes, 2, pairs=True)
             .prediction_batches(np.arange(8))]
    assert len(cells) == 1  # 8 bags of at most 40 instances: 320 cells, within PREDICT_CELLS
    for parts in (cells, pairs):
        assert sorted(np.concatenate(parts)) == list(range(8))  # every bag once
    longest = [sizes[part].max() for part in pairs]
    assert all(size ** 2 * len(part) <= training.PREDICT_PAIRS or len(part) == 1
               for size, part in zip(longest, pairs, strict=True))
    assert [len(part) for part in pairs if sizes[part].max() == 40] == [1, 1, 1]  # a 40-instance bag alone


def test_each_step_draws_its_own_instances_from_the_bag_without_repeats():
    sizes = np.array([2, 6, 9, 3, 12, 5])
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    rows = np.arange(offsets[-1], dtype=np.float32)[:, None]  # each instance's row number as its feature
    batches, rng = Batches(matrix_rows(rows, offsets), sizes, 1), np.random.default_rng(0)
    seen = {bag: set() for bag in range(len(sizes))}
    for _ in range(20):
        for part, X, mask in batches.training_batches(np.arange(len(sizes)), 2, 4, rng):
            for bag, x, m in zip(part, X[..., 0].numpy(), mask.numpy()):
                drawn = x[m].astype(int)
                assert len(drawn) == min(sizes[bag], 4) and len(set(drawn)) == len(drawn)
                assert np.all((offsets[bag] <= drawn) & (drawn < offsets[bag + 1])) and np.all(np.diff(drawn) > 0)
                seen[bag].update(drawn)
    # over 20 epochs every instance of a cut bag was drawn at some step
    assert all(len(seen[bag]) == sizes[bag] for bag in seen)


def test_training_batches_hold_bags_of_similar_size_and_cover_every_bag_once_an_epoch():
    rng = np.random.default_rng(1)
    sizes = rng.integers(1, 200, 400)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    batches = Batches(matrix_rows(np.zeros((offsets[-1], 1), dtype=np.float32), offsets), sizes, 1)
    parts = [part for part, X, mask in batches.training_batches(np.arange(400), 8, None, rng)]
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(400))
    padded = sum(len(part) * sizes[part].max() for part in parts)
    shuffled = rng.permutation(400)
    random_padded = sum(8 * sizes[shuffled[i:i + 8]].max() for i in range(0, 400, 8))
    assert padded < 1.1 * sizes.sum() < random_padded  # random batches pad far more
    # the make-up of the batches changes from epoch to epoch
    again = [tuple(part) for part, X, mask in batches.training_batches(np.arange(400), 8, None, rng)]
    assert set(again) != {tuple(part) for part in parts}


def test_the_fit_runs_on_the_workers_thread_share_and_leaves_torchs_own_setting_as_it_was():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        SeenABMIL(**FAST).fit(witness_bags(6))
        assert {threads for _, _, threads in Seen.calls} == {1}  # OMP_NUM_THREADS, as a fit worker sets it
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@NO_CUDA
def test_auto_trains_on_the_cpu_where_there_is_no_gpu_and_the_model_predicts_there():
    train, test = witness_bags(8), witness_bags(4, seed=1)
    model = ABMILClassifier(**FAST).fit(train)
    assert model.get_params()["device"] == "auto" and model.device_ == "cpu"
    assert resolve_device("auto") == torch.device("cpu")
    cpu = ABMILClassifier(device="cpu", **FAST).fit(train)
    np.testing.assert_array_equal(cpu.predict_proba(test), model.predict_proba(test))


@NO_CUDA
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_cuda_asked_for_without_cuda_is_a_one_line_error_naming_the_parameter(device):
    with pytest.raises(ValueError, match=rf"^device='{device}' but CUDA is not available here .*'auto' or 'cpu'$"):
        ABMILClassifier(device=device, **FAST).fit(witness_bags(4))


@NO_CUDA
def test_a_model_asked_to_predict_on_cuda_without_cuda_says_so():
    model = ABMILClassifier(**FAST).fit(witness_bags(4))
    model.set_params(device="cuda")
    with pytest.raises(ValueError, match="CUDA is not available"):
        model.predict(witness_bags(2, seed=1))


@pytest.mark.parametrize(("params", "message"), [
    ({"device": "gpu"}, r"device='gpu' is not a device: use 'auto', 'cpu', 'cuda' or 'cuda:N'"),
    ({"device": "meta"}, r"device='meta': the deep learners run on 'cpu' or 'cuda'"),
    ({"max_instances": 0}, r"max_instances=0: give a whole number of instances of at least 1"),
    ({"max_instances": 2.5}, r"max_instances=2.5: give a whole number"),
    ({"seeds": 0}, r"seeds=0: give a whole number of networks of at least 1"),
    ({"seeds": "3"}, r"seeds='3': give a whole number of networks"),
])
def test_a_bad_device_or_max_instances_is_a_clear_error(params, message):
    with pytest.raises(ValueError, match=message):
        ABMILClassifier(**{**FAST, **params}).fit(witness_bags(4))


def test_a_model_pickled_without_device_max_instances_and_seeds_loads_and_predicts_as_before():
    train, test = witness_bags(8), witness_bags(4, seed=1)
    model = ABMILClassifier(**FAST).fit(train)
    state = model.__getstate__()
    # what a model logged before these parameters holds: one network's weights as network_
    del state["device"], state["max_instances"], state["seeds"]
    state["network_"] = state.pop("networks_")[0]
    old = ABMILClassifier.__new__(ABMILClassifier)
    old.__setstate__(state)
    assert old.get_params()["max_instances"] is None and old.get_params()["device"] == "auto"
    assert old.get_params()["seeds"] == 1 and len(old.networks_) == 1
    np.testing.assert_array_equal(old.predict_proba(test), model.predict_proba(test))


@pytest.fixture(scope="module")
def mapped(tmp_path_factory):
    """120 bags of 5 to 40 float32 instances of 16 features, mapped read-only from a file as a run's are."""
    rng = np.random.default_rng(0)
    sizes = rng.integers(5, 41, size=120)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    X = (rng.standard_normal((offsets[-1], 16)) * rng.uniform(0.5, 3, 16) + 2).astype(np.float32)
    y = rng.integers(0, 2, size=120)
    X[offsets[:-1][y == 1], 0] += 3.0  # a witness in each positive bag
    return automil.Bags(X, offsets, y).mapped(tmp_path_factory.mktemp("instances") / "instances.npy")


@pytest.mark.parametrize("learner", [ABMILClassifier, DSMILClassifier])
def test_a_network_on_streamed_bags_reads_a_batch_at_a_time_and_gives_the_gathered_folds_figures(
        mapped, learner, monkeypatch):
    train, test = np.arange(120)[np.arange(120) % 4 != 0], np.arange(0, 120, 4)
    params = {**FAST, "epochs": 3, "max_instances": 16, "validation_fraction": 0.2}  # cut bags, held-out bags
    gathered = Standardized(learner(**params)).fit(mapped.subset(train))
    # a streamed fold has no X: every instance the network reads passes through StreamedBags._read
    reads, original = [], StreamedBags._read
    monkeypatch.setattr(StreamedBags, "_read", lambda self, rows: reads.append(np.arange(mapped.n_instances)[rows].size)
                        or original(self, rows))
    monkeypatch.setattr(streamed_bags, "BLOCK_BYTES", 8 * 16 * 200)  # the moments' blocks: 200 rows
    monkeypatch.setattr(training, "READ_BYTES", 4 * 16 * 64)  # a batch read 64 float32 rows at a time
    streamed = Standardized(learner(**params)).fit_subset(mapped, train)
    fold = mapped.subset(train).n_instances
    assert reads and max(reads) <= 200 < fold / 5  # blocks and batches, never the fold
    assert np.array_equal(streamed.estimator_.mean_, gathered.estimator_.mean_)
    assert np.array_equal(streamed.estimator_.scale_, gathered.estimator_.scale_)
    reads.clear()
    scores = streamed.decision_function(StreamedBags(mapped, test))
    assert max(reads) <= 64
    # same batches, same draws, same rows: the figures to the last bit
    assert np.array_equal(scores, gathered.decision_function(mapped.subset(test)))
    # either model predicts either kind of bags, and the streamed one pickles
    assert np.array_equal(streamed.decision_function(mapped.subset(test)), scores)
    assert np.array_equal(gathered.decision_function(StreamedBags(mapped, test)), scores)
    loaded = pickle.loads(pickle.dumps(streamed))
    assert np.array_equal(loaded.witness(StreamedBags(mapped, test)), gathered.witness(mapped.subset(test)))
    assert np.array_equal(loaded.instance_scores(StreamedBags(mapped, test)),
                          gathered.instance_scores(mapped.subset(test)))


def test_on_epoch_sees_every_epoch_its_losses_and_the_epochs_whose_weights_are_kept():
    from automil_deep.training import fit_network, seeded_torch

    bags = witness_bags(30)
    y = np.unique(bags.y, return_inverse=True)[1]
    batches = Batches(matrix_rows(bags.X, bags.offsets), bags.sizes, bags.n_features)
    train, validation, seen = np.arange(22), np.arange(22, 30), []
    with seeded_torch(0):
        network = ABMIL(bags.n_features, 2, 16, 0.0, False)
        result = fit_network(network, batches, y, train, validation, learning_rate=3e-3, weight_decay=0.0,
                             epochs=8, batch_size=4, max_instances=None, patience=3, min_epochs=3,
                             rng=np.random.default_rng(0), report=False, on_epoch=seen.append)
    assert [epoch.number for epoch in seen] == list(range(1, result.run + 1))
    assert [epoch.validation_loss for epoch in seen] == result.validation_loss
    kept = [epoch for epoch in seen if epoch.kept]
    assert kept[0].number == 3 and kept[-1].number == result.kept  # never before min_epochs; the last is kept
    assert all(later.validation_loss < earlier.validation_loss for earlier, later in zip(kept, kept[1:]))
    assert all(epoch.train_loss > 0 and epoch.validation_logits.shape == (8, 2) for epoch in seen)
