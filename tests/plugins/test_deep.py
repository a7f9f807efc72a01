"""The deep learners (automil_deep; tests/test_contract.py runs their contract): seeding, the
per-epoch validation losses, weights-only pickles that load in a fresh process, and the one-line hint when
PyTorch is missing."""

import functools
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("torch")

from contract_settings import SMALL_NETWORK, small_network  # noqa: E402

import automil_deep  # noqa: E402 - after the skip: the plugin's tests need torch
from automil import FitPruned, plugins  # noqa: E402
from automil.checks import witness_bags  # noqa: E402
from automil.cli.main import main  # noqa: E402
from automil.epochs import epoch_listener  # noqa: E402
from automil.tune.workers.fits import load_learners  # noqa: E402
from automil.tune.workers.isolation import FitWorker  # noqa: E402


def _specs() -> dict:
    specs = []
    automil_deep.register_learners(register=specs.append)
    return {spec.name: spec for spec in specs}


SPECS = _specs()


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    # what a fit worker on a loaded machine gets; two threads on tiny networks only wait on each other
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def test_the_plugin_registers_the_five_learners_of_issue_26():
    assert sorted(SPECS) == ["MI-Net", "abmil", "dsmil", "mi-net", "transmil"]
    assert all(spec.witness for spec in SPECS.values())


@pytest.mark.parametrize("learner", sorted(SPECS))
def test_each_epoch_leaves_a_validation_loss_and_the_seed_fixes_the_model(learner):
    train, test = witness_bags(10), witness_bags(5, seed=1)
    spec = small_network(SPECS[learner])
    held_out = {"validation_fraction": 0.2, "patience": 3}
    first = spec.build(random_state=3, **held_out).fit(train)
    assert 1 <= first.n_epochs_ <= len(first.validation_loss_) <= SMALL_NETWORK["epochs"]
    assert np.isfinite(first.validation_loss_).all()
    again = spec.build(random_state=3, **held_out).fit(train)
    other = spec.build(random_state=4, **held_out).fit(train)
    np.testing.assert_array_equal(again.predict_proba(test), first.predict_proba(test))
    assert not np.array_equal(other.predict_proba(test), first.predict_proba(test))


def test_each_epoch_is_reported_to_the_driver_which_can_stop_the_fit():
    train = witness_bags(10)
    spec = small_network(SPECS["abmil"])
    held_out = {"validation_fraction": 0.2, "patience": 3}
    heard = []
    with epoch_listener(lambda epoch, score: heard.append((epoch, score)) and False):
        fitted = spec.build(random_state=3, **held_out).fit(train)
    # one report per epoch of the early-stopped training, none from the second training on all bags
    assert [epoch for epoch, _ in heard] == list(range(len(fitted.validation_loss_)))
    assert all(0.0 <= score <= 1.0 for _, score in heard)  # the held-out bags' balanced accuracy
    with epoch_listener(lambda epoch, score: epoch == 1), pytest.raises(FitPruned, match="after epoch 2"):
        spec.build(random_state=3, **held_out).fit(train)


def test_instance_scores_give_the_witness_and_attention_sums_to_one_per_bag():
    train, test = witness_bags(20), witness_bags(10, seed=1)
    model = small_network(SPECS["abmil"]).build().fit(train)
    scores = model.instance_scores(test)
    assert scores.shape == (test.n_instances, 2)
    np.testing.assert_allclose(np.add.reduceat(scores[:, 0], test.offsets[:-1]), 1.0, rtol=1e-5)
    bag_of_argmax = [int(np.argmax(scores[test.offsets[i]:test.offsets[i + 1], 0])) for i in range(test.n_bags)]
    np.testing.assert_array_equal(model.witness(test), bag_of_argmax)
    positives = np.flatnonzero(test.y == 1)
    planted = [int(np.argmax(test.instance_y[test.offsets[i]:test.offsets[i + 1]])) for i in positives]
    assert np.mean(model.witness(test)[positives] == planted) >= 0.8


def test_a_fitted_model_pickles_its_weights_as_arrays_and_predicts_the_same_in_a_fresh_process(tmp_path):
    train, test = witness_bags(10), witness_bags(5, seed=1)
    model = small_network(SPECS["transmil"]).build().fit(train)
    data = pickle.dumps(model)
    assert b"torch" not in data, "the pickle holds a torch object; it should hold only arrays"
    (tmp_path / "model.pkl").write_bytes(data)
    np.save(tmp_path / "X.npy", test.X)
    np.save(tmp_path / "offsets.npy", test.offsets)
    script = textwrap.dedent("""
        import pickle, sys
        import numpy as np
        from automil import Bags
        folder = sys.argv[1]
        model = pickle.load(open(f"{folder}/model.pkl", "rb"))
        bags = Bags(np.load(f"{folder}/X.npy"), np.load(f"{folder}/offsets.npy"))
        np.save(f"{folder}/proba.npy", model.predict_proba(bags))
        np.save(f"{folder}/witness.npy", model.witness(bags))
    """)
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, timeout=120)
    np.testing.assert_allclose(np.load(tmp_path / "proba.npy"), model.predict_proba(test), rtol=1e-6)
    np.testing.assert_array_equal(np.load(tmp_path / "witness.npy"), model.witness(test))


def _imported(_data, module: str) -> bool:
    """In a fit worker: whether ``module`` is imported there."""
    return module in sys.modules


@pytest.mark.parametrize(("learners", "preloaded"), [(("abmil",), True), (("nsk",), False)])
def test_a_fit_worker_imports_torch_at_start_only_for_a_run_with_a_deep_learner(monkeypatch, learners, preloaded):
    monkeypatch.setenv(plugins.LOAD_PLUGINS_ENV, "svm,deep")  # what the worker process loads
    with FitWorker(threads=1, preload=functools.partial(load_learners, learners=learners)) as worker:
        worker.wait_started()
        assert worker.call(_imported, "torch._dynamo", timeout=60) is preloaded


def test_without_torch_automil_learners_says_in_one_line_how_to_get_the_deep_learners(fresh_plugins, capsys):
    fresh_plugins.setenv(plugins.LOAD_PLUGINS_ENV, "deep")
    fresh_plugins.setitem(sys.modules, "torch", None)  # what `import torch` sees when it is not installed
    assert main(["learners"]) == 0
    out, err = capsys.readouterr()
    assert "abmil" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "pip install 'automil[deep]'" in lines[0] and "plugin 'deep'" in lines[0]
