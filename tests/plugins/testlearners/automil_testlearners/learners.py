"""The test learners; every file they write goes to ``$AUTOMIL_TEST_RECORDS``."""

import json
import os
import time
from pathlib import Path

import numpy as np

import automil


def make_test_bags():
    """48 bags of 2-6 instances in 5 features; class-1 bags hold one instance shifted by +2 in feature 0."""
    rng = np.random.default_rng(7)
    y = np.arange(48) % 2
    bags = []
    for label in y:
        bag = rng.standard_normal((int(rng.integers(2, 7)), 5))
        bag[0, 0] += 4.0 * label
        bags.append(bag)
    return automil.Bags.from_list(bags, y, names=[f"bag-{i:03d}" for i in range(48)], source="test-bags")


def centroid_space(trial):
    return {"shrink": trial.suggest_float("shrink", 0.0, 1.0)}


def pruney_space(trial):
    import optuna

    raise optuna.TrialPruned(f"no setting fits {trial.user_attrs['n_features']} features")


def sleepy_space(trial):
    return {"seconds": trial.suggest_float("seconds", 60.0, 120.0)}


def recorder_space(trial):
    # The study and trial number travel with the parameters so each record says which tuning made it.
    return {"shrink": trial.suggest_float("shrink", 0.0, 1.0),
            "tag": f"{trial.study.study_name}#{trial.number}"}


def _record(kind: str, payload: dict):
    directory = Path(os.environ["AUTOMIL_TEST_RECORDS"])
    directory.mkdir(parents=True, exist_ok=True)
    payload = {**payload, "time": time.monotonic_ns()}
    (directory / f"{kind}-{os.getpid()}-{payload['time']}.json").write_text(json.dumps(payload))


class Centroid(automil.BagClassifier):
    """Nearest class centroid of bag maxima, ``shrink`` pulling centroids towards their mean."""

    def __init__(self, shrink=0.0):
        self.shrink = shrink

    def _embed(self, bags):
        return np.maximum.reduceat(bags.X, bags.offsets[:-1], axis=0)

    def _fit(self, bags, y):
        Z = self._embed(bags)
        centres = np.stack([Z[y == k].mean(axis=0) for k in range(len(self.classes_))])
        self.centres_ = (1 - self.shrink) * centres + self.shrink * centres.mean(axis=0)
        self.training_mean_ = bags.X.mean(axis=0)

    def _decision_function(self, bags):
        Z = self._embed(bags)
        return -((Z[:, None, :] - self.centres_[None]) ** 2).sum(axis=2)


def onefeature_space(trial):
    return {"feature": trial.suggest_int("feature", 0, trial.user_attrs["n_features"] - 1)}


class OneFeature(Centroid):
    """A centroid on one feature's bag maxima: which feature matters (a space that depends on the data)."""

    def __init__(self, feature=0, shrink=0.0):
        self.feature = feature
        self.shrink = shrink

    def _embed(self, bags):
        return super()._embed(bags)[:, [self.feature]]


class Sleepy(Centroid):
    def __init__(self, seconds=60.0):
        self.seconds = seconds

    def _fit(self, bags, y):
        _record("sleepy", {"pid": os.getpid()})
        time.sleep(self.seconds)


class Crashy(Centroid):
    def _fit(self, bags, y):
        raise RuntimeError("crashy always fails in fit")


class Misshapen(Centroid):
    def predict(self, bags):
        return np.append(super().predict(bags), self.classes_[0])


class Recorder(Centroid):
    def __init__(self, shrink=0.0, tag=""):
        self.shrink = shrink
        self.tag = tag

    def _fit(self, bags, y):
        _record("fit", {"tag": self.tag, "bags": bags.names.tolist(), "pid": os.getpid()})
        time.sleep(float(os.environ.get("AUTOMIL_TEST_FIT_DELAY", "0")))  # to make processes overlap
        super()._fit(bags, y)

    def _decision_function(self, bags):
        _record("score", {"tag": self.tag, "bags": bags.names.tolist(), "pid": os.getpid()})
        return super()._decision_function(bags)


def make_wide_bags():
    """320 bags of 25 instances in 500 features (4 million values: large enough for the driver to estimate a
    learner's cost on samples first); class-1 bags hold one instance shifted by +4 in feature 0."""
    rng = np.random.default_rng(11)
    y = np.arange(320) % 2
    X = rng.standard_normal((320 * 25, 500)).astype(np.float32)
    X[np.arange(320)[y == 1] * 25, 0] += 4.0
    return automil.Bags(X, np.arange(0, 320 * 25 + 1, 25), y, source="wide-bags")


def quadratic_space(trial):
    return {"seconds_at_1000": trial.suggest_float("seconds_at_1000", 1.0, 2.0)}


class Quadratic(Centroid):
    """A centroid whose fit first sleeps ``seconds_at_1000 * (n_instances / 1000) ** 2``: a quadratic solver."""

    def __init__(self, seconds_at_1000=1.0, shrink=0.0):
        self.seconds_at_1000 = seconds_at_1000
        self.shrink = shrink

    def _fit(self, bags, y):
        time.sleep(self.seconds_at_1000 * (bags.n_instances / 1000) ** 2)
        super()._fit(bags, y)


class Linear(Quadratic):
    """A centroid whose fit first sleeps ``seconds_at_1000 * n_instances / 1000``: a slow linear solver."""

    def _fit(self, bags, y):
        time.sleep(self.seconds_at_1000 * bags.n_instances / 1000)
        Centroid._fit(self, bags, y)


COLD_SECONDS = 2.0  # the one-time cost of a learner's first fit in a process (imports, compilation)
_warm = False


class ColdQuadratic(Quadratic):
    """A quadratic solver whose first fit in a process also pays ``COLD_SECONDS`` of one-time costs."""

    def _fit(self, bags, y):
        global _warm
        if not _warm:
            time.sleep(COLD_SECONDS)
            _warm = True
        super()._fit(bags, y)


EPOCHS = 12


def epochs_space(trial):
    return {"quality": trial.suggest_float("quality", 0.0, 1.0)}


class Epochs(Centroid):
    """A centroid trained in ``EPOCHS`` epochs that reports ``quality`` as its held-out score after each
    (automil.report_epoch) and records each epoch it ran: the driver may stop it between two."""

    def __init__(self, quality=0.5, shrink=0.0):
        self.quality = quality
        self.shrink = shrink

    def _fit(self, bags, y):
        for epoch in range(EPOCHS):
            _record("epoch", {"quality": self.quality, "epoch": epoch})
            automil.report_epoch(epoch, self.quality)
        super()._fit(bags, y)


EPOCH_SECONDS = 0.05  # an anytime learner's epoch of work


def anytime_space(trial):
    return {"shrink": trial.suggest_float("shrink", 0.0, 1.0)}


def late_space(trial):
    return {**anytime_space(trial), "epochs": 10**6, "warm_up": 10**6}


def over_space(trial):
    return {**anytime_space(trial), "overrun": 0.25}


class Anytime(Centroid):
    """A centroid trained in epochs of ``EPOCH_SECONDS`` each, ``epochs`` of them (``None``: no end of its own,
    as many as its time holds) that stops when the driver's time for the fit would not hold another
    (automil.time_left) and says how far it got (``time_limited_params_``); it records every fit's epochs and
    seconds. A fit cut short of ``warm_up`` epochs has learnt nothing: it scores bags by coin flips. One that
    misjudges its own speed by ``overrun`` runs that share past the time it was told."""

    def __init__(self, epochs=None, shrink=0.0, warm_up=0, overrun=0.0):
        self.epochs = epochs
        self.shrink = shrink
        self.warm_up = warm_up
        self.overrun = overrun

    def _fit(self, bags, y):
        ran, self.time_limited_params_ = 0, {}
        told, began = automil.time_left(), time.monotonic()
        for _ in range(10**6 if self.epochs is None else self.epochs):  # 10**6: a fit never told its time
            if told is not None and (1 + self.overrun) * told - (time.monotonic() - began) < 2 * EPOCH_SECONDS:
                self.time_limited_params_ = {"epochs": ran}
                break
            time.sleep(EPOCH_SECONDS)
            ran += 1
        _record("anytime", {"epochs": self.epochs, "ran": ran, "limited": bool(self.time_limited_params_),
                            "told": told, "seconds": time.monotonic() - began})
        super()._fit(bags, y)
        self.learnt_ = ran >= self.warm_up

    def _decision_function(self, bags):
        if self.learnt_:
            return super()._decision_function(bags)
        return np.random.default_rng(0).normal(size=(len(bags), len(self.classes_)))
