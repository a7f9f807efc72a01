"""The deep learners (automil_deep; tests/test_contract.py runs their contract): seeding, the
per-epoch validation losses, weights-only pickles that load in a fresh process, and the one-line hint when
PyTorch is missing, and torch only in the fit workers that fit a deep learner."""

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from driver_support import imported

pytest.importorskip("torch")

from contract_settings import SMALL_NETWORK, small_network  # noqa: E402

import automil  # noqa: E402
import automil_deep  # noqa: E402 - after the skip: the plugin's tests need torch
from automil import FitPruned, plugins  # noqa: E402
from automil.checks import witness_bags  # noqa: E402
from automil.cli.main import main  # noqa: E402
from automil.epochs import epoch_listener, time_limit  # noqa: E402
from automil.tune.options import TuneOptions  # noqa: E402
from automil.tune.workers.fits import fit_predict, fit_worker, import_for  # noqa: E402


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


def test_a_fit_whose_time_ran_out_keeps_its_first_epoch_and_says_how_far_it_got():
    train, test = witness_bags(10), witness_bags(5, seed=1)
    spec = small_network(SPECS["abmil"])
    settings = {"validation_fraction": 0.2, "patience": 3, "random_state": 3}
    free = spec.build(**settings).fit(train)
    assert free.time_limited_params_ == {}  # no driver's limit: training ends by its own rules
    with time_limit(0.0):  # no time left at all: one epoch, and no second training on every bag
        short = spec.build(**settings).fit(train)
    assert short.time_limited_params_ == {"epochs": 1, "min_epochs": 1}
    assert len(short.validation_loss_) == short.n_epochs_ == 1 < len(free.validation_loss_)
    assert np.isfinite(short.predict_proba(test)).all()
    # the parameters it reached make a fit without a limit train as far: one epoch, then one on every bag
    again = spec.build(**settings, **short.time_limited_params_).fit(train)
    assert again.time_limited_params_ == {} and len(again.validation_loss_) == again.n_epochs_ == 1
    with time_limit(3600.0):  # time to spare: the same model as without a limit
        spared = spec.build(**settings).fit(train)
    np.testing.assert_array_equal(spared.predict_proba(test), free.predict_proba(test))


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


def test_seeds_average_the_class_probabilities_and_instance_scores_of_networks_from_their_own_seeds():
    train, test = witness_bags(12), witness_bags(6, seed=1)
    spec = small_network(SPECS["abmil"])
    held_out = {"validation_fraction": 0.25, "patience": 3, "random_state": 5}
    one = spec.build(**held_out).fit(train)
    three = spec.build(**held_out, seeds=3).fit(train)
    assert len(one.networks_) == 1 and len(three.networks_) == 3
    # the first network is the one-seed model's (same seed, same split); the others differ from it
    weights = [{name: value.detach().numpy() for name, value in net.state_dict().items()} for net in three.networks_]
    for name, value in one.networks_[0].state_dict().items():
        np.testing.assert_array_equal(weights[0][name], value.detach().numpy())
        assert not np.array_equal(weights[1][name], weights[0][name]) or value.numel() == 0
    members = [pickle.loads(pickle.dumps(three)) for _ in range(3)]
    for k, member in enumerate(members):
        member.networks_ = member.networks_[k:k + 1]  # each network alone
    np.testing.assert_allclose(three.predict_proba(test), np.mean([m.predict_proba(test) for m in members], axis=0),
                               rtol=1e-6)
    np.testing.assert_allclose(three.instance_scores(test),
                               np.mean([m.instance_scores(test) for m in members], axis=0), rtol=1e-6)
    np.testing.assert_array_equal(three.predict(test), three.classes_[three.predict_proba(test).argmax(axis=1)])
    again = pickle.loads(pickle.dumps(three))  # the pickle keeps every network
    np.testing.assert_array_equal(again.predict_proba(test), three.predict_proba(test))


def test_a_network_on_centred_bags_is_blind_to_a_shift_of_every_instance_of_a_bag():
    # a patient's offset on every patch of a slide moves its bag's mean and nothing else
    train, test = witness_bags(10), witness_bags(6, seed=1)
    offsets = np.random.default_rng(2).normal(0.0, 2.0, (test.n_bags, test.n_features))
    shifted = test.with_instances(test.X + np.repeat(offsets, test.sizes, axis=0))
    centred = small_network(SPECS["abmil"]).build(random_state=0, centre_bags=True).fit(train)
    np.testing.assert_allclose(centred.predict_proba(shifted), centred.predict_proba(test), rtol=1e-5, atol=1e-6)
    # streamed bags are centred on the same means
    np.testing.assert_allclose(centred.predict_proba(automil.StreamedBags(test)), centred.predict_proba(test),
                               rtol=1e-9)
    plain = small_network(SPECS["abmil"]).build(random_state=0).fit(train)
    assert not np.allclose(plain.predict_proba(shifted), plain.predict_proba(test), rtol=1e-3)
    again = pickle.loads(pickle.dumps(centred))  # the pickle keeps the choice
    np.testing.assert_array_equal(again.predict_proba(shifted), centred.predict_proba(shifted))


def test_the_decision_function_is_the_log_of_the_probabilities_so_its_positive_column_ranks_bags_as_they_do():
    # a binary run scores bags by the positive column of decision_function (AUC, ensembles, calibration); a raw
    # logit of one class ignores the other's and ranks bags otherwise than the probability
    train, test = witness_bags(10), witness_bags(8, seed=1)
    for seeds in (1, 2):
        model = small_network(SPECS["dsmil"]).build(random_state=0, seeds=seeds).fit(train)
        np.testing.assert_allclose(np.exp(model.decision_function(test)), model.predict_proba(test), rtol=1e-9)


def test_only_the_first_of_several_networks_reports_its_epochs_to_the_driver():
    heard = []
    with epoch_listener(lambda epoch, score: heard.append(epoch) and False):
        fitted = small_network(SPECS["mi-net"]).build(random_state=1, validation_fraction=0.25, patience=3,
                                                      seeds=2).fit(witness_bags(10))
    assert heard == list(range(len(fitted.validation_loss_)))


def test_only_a_fit_worker_that_fits_a_deep_learner_imports_torch_and_its_replacement_too(fresh_plugins):
    # fresh_plugins: the registry this process loads under "svm,deep" is dropped after the test
    fresh_plugins.setenv(plugins.LOAD_PLUGINS_ENV, "svm,deep")  # what the worker process loads
    bags = witness_bags(6)
    with fit_worker(TuneOptions(jobs=2)) as worker:  # a run's worker: the deep learners are registered
        worker.set_data(bags)
        import_for(worker, ["nsk"])  # what the trial loop does before each trial's clock starts
        out = worker.call(fit_predict, "nsk", {}, np.arange(8), np.arange(8, 12), 0, timeout=120)
        assert out.y_pred.shape == (4,)
        assert worker.call(imported, "torch", timeout=60) is False
        import_for(worker, ["abmil"])
        assert worker.call(imported, "torch._dynamo", timeout=60) is True
        worker.kill()  # as at a fit's time-out: the replacement is ready for the same learner
        assert worker.call(imported, "torch._dynamo", timeout=60) is True
    with fit_worker(TuneOptions(jobs=2)) as other:  # another run's worker starts without torch again
        assert other.call(imported, "torch", timeout=60) is False


def test_without_torch_automil_learners_says_in_one_line_how_to_get_the_deep_learners(fresh_plugins, capsys):
    fresh_plugins.setenv(plugins.LOAD_PLUGINS_ENV, "deep")
    fresh_plugins.setitem(sys.modules, "torch", None)  # what `import torch` sees when it is not installed
    assert main(["learners"]) == 0
    out, err = capsys.readouterr()
    assert "abmil" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "pip install 'automil[deep]'" in lines[0] and "plugin 'deep'" in lines[0]


def test_on_a_slide_cohort_the_defaults_train_past_the_minimum_epochs_and_predict_both_classes(tmp_path):
    # A small cohort as experiments/deep_cohorts.py writes it (slides of ~160 patches, a patient's slides on one
    # side of every split): a few dozen held-out slides used to stop training after 1 to 3 epochs, and a
    # network trained that long gave every slide one class.
    from automil_datasets.slides import write_slide_set
    from automil_deep.training import MIN_EPOCHS, minimum_epochs

    written = write_slide_set(tmp_path, "clam", n_cases=30, n_features=16, seed=2, pt=False)
    bags = automil.load_bags(written.features, labels=str(written.labels), groups="case_id")
    folds = automil.bag_folds(bags.y, 4, 0, bags.groups)
    train, test = bags.subset(np.flatnonzero(folds != 0)), bags.subset(np.flatnonzero(folds == 0))
    model = SPECS["abmil"].build(random_state=0).fit(train)
    floor = minimum_epochs(None, model.epochs)
    assert floor == max(MIN_EPOCHS, model.epochs // 4) == 12
    assert len(model.validation_loss_) >= floor and model.n_epochs_ >= floor
    assert len(np.unique(model.predict(test))) == 2
    # an explicit minimum holds too, whatever the patience
    short = SPECS["abmil"].build(random_state=0, min_epochs=5, patience=1, epochs=8, hidden=32).fit(train)
    assert 5 <= short.n_epochs_ <= len(short.validation_loss_) <= 8


def test_balanced_class_weights_give_every_class_the_same_total_weight():
    model = SPECS["abmil"].build()
    model.classes_ = np.array([0, 1, 2])
    y = np.array([0] * 30 + [1] * 6 + [2] * 4)
    weight = model._class_weight(y)
    np.testing.assert_allclose(np.bincount(y, weights=weight[y]), len(y) / 3)
    assert model.set_params(class_weight=None)._class_weight(y) is None
    with pytest.raises(ValueError, match="class_weight"):
        model.set_params(class_weight="even")._class_weight(y)
