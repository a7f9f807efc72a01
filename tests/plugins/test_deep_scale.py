"""The deep learners at scale: a training step sees at most ``max_instances`` of a bag (prediction all of
them), batches of bags of similar size, and the device they train on, on a machine without a GPU."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import automil  # noqa: E402 - after the skip: the plugin's tests need torch
from automil.checks import witness_bags  # noqa: E402
from automil_deep.estimators import ABMILClassifier  # noqa: E402
from automil_deep.networks import ABMIL  # noqa: E402
from automil_deep.training import Batches, resolve_device  # noqa: E402

FAST = {"hidden": 16, "epochs": 4, "batch_size": 4, "validation_fraction": 0.0, "random_state": 0}
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without CUDA")


class Seen(torch.nn.Module):
    """ABMIL that records, at every forward pass, whether it trains, each bag's instances and the threads."""

    calls: list = []

    def __init__(self, *args):
        super().__init__()
        self.network = ABMIL(*args)

    def forward(self, X, mask):
        Seen.calls.append((self.training, mask.sum(dim=1).tolist(), torch.get_num_threads()))
        return self.network(X, mask)


class SeenABMIL(ABMILClassifier):
    def _network(self, n_features, n_classes):
        return Seen(n_features, n_classes, self.hidden, self.dropout, self.gated)


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # a fit worker's share on a loaded machine
    Seen.calls = []


def test_a_training_step_sees_at_most_max_instances_of_a_bag_and_prediction_sees_all():
    train, test = witness_bags(10), witness_bags(6, seed=1)
    model = SeenABMIL(max_instances=4, **{**FAST, "validation_fraction": 0.2, "patience": 2}).fit(train)
    training = [size for trains, sizes, _ in Seen.calls if trains for size in sizes]
    held_out = [sorted(sizes) for trains, sizes, _ in Seen.calls if not trains]
    assert max(training) == 4 and max(np.diff(train.offsets)) > 4  # the larger bags were cut, to 4
    assert len(training) == (len(model.validation_loss_) * 16 + model.n_epochs_ * 20)  # each bag once an epoch
    # early stopping's held-out bags (fold 0 of 5, as the estimator draws them) keep every instance
    seed = int(np.random.SeedSequence(FAST["random_state"]).generate_state(1)[0])
    validation = np.flatnonzero(automil.bag_folds(train.y, 5, seed) == 0)
    assert max(np.diff(train.offsets)[validation]) > 4
    assert held_out == [sorted(np.diff(train.offsets)[validation])] * len(model.validation_loss_)
    Seen.calls = []
    model.predict(test)
    assert sorted(size for _, sizes, _ in Seen.calls for size in sizes) == sorted(np.diff(test.offsets))


def test_each_step_draws_its_own_instances_from_the_bag_without_repeats():
    sizes = np.array([2, 6, 9, 3, 12, 5])
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    rows = np.arange(offsets[-1], dtype=np.float32)[:, None]  # each instance's row number as its feature
    batches, rng = Batches(rows, offsets), np.random.default_rng(0)
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
    batches = Batches(np.zeros((offsets[-1], 1), dtype=np.float32), offsets)
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
])
def test_a_bad_device_or_max_instances_is_a_clear_error(params, message):
    with pytest.raises(ValueError, match=message):
        ABMILClassifier(**{**FAST, **params}).fit(witness_bags(4))
