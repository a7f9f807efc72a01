"""What every deep learner shares, whatever its task: one training procedure and one way of reading bags.

A learner is a network (a mixin of ``automil_deep.estimators`` with the network's own parameters and its
``_network``) trained for a task (a base that says what the network's outputs mean: classes, a survival
model, a value). PyTorch is imported when a model is fitted or loaded, not when the plugin registers its
learners. A fitted model pickles its weights as CPU arrays (``state_dict``), so a model logged to MLflow holds
no closure and no torch object, and loads in any process that has torch, with or without the GPU it was
trained on.
"""

from __future__ import annotations

import inspect
import time

import numpy as np

import automil
from automil import StreamedBags, time_left

# Instances of a bag a training step sees at most (:class:`DeepMIL`, ``max_instances``).
MAX_INSTANCES = 512

__all__ = ["DeepMIL", "MAX_INSTANCES"]


class DeepMIL:
    """Base of the deep learners: standardizes instances (and clinical covariates), holds out bags for early
    stopping, trains the network a subclass builds in ``_network(n_features, n_outputs)`` (one for each of
    ``seeds``) on the loss of its task's head (:mod:`automil_deep.heads`), and reads outputs from them.

    It streams (``accepts_streamed``): a batch reads only the instances it uses, so a cohort larger than
    memory trains and predicts with a batch in memory, with the figures of the same bags gathered.

    Bags with clinical covariates (``bags.covariates``, one row of numbers a bag) give them to the network
    after its pooling (:class:`~automil_deep.networks.WithCovariates`), standardized with the training bags'
    mean and standard deviation; a model fitted with covariates needs them to predict.

    Parameters
    ----------
    learning_rate : float, default=2e-3
        Adam's step size.
    weight_decay : float, default=1e-4
        Adam's L2 penalty on the weights.
    hidden : int, default=128
        Width of the first layer (the next ones halve it). Half the papers' 256: as accurate for abmil on
        musk1 and elephant, and half the time of a fit.
    dropout : float, default=0.25
        Dropout after every hidden layer.
    epochs : int, default=50
        Most passes over the training bags (early stopping ends most fits sooner).
    batch_size : int, default=8
        Bags per step (padded to the longest with a mask; a step's bags are of similar size); the papers take
        one bag a step, which is about 8 times slower an epoch on CPU, and no more accurate for abmil on musk1.
    max_instances : int or None, default=512
        Instances of a bag a training step sees at most: a larger bag is cut to that many, drawn at random
        at every step, so that an epoch costs at most bags x ``max_instances``. Early stopping scores its
        held-out bags on at most 4 x ``max_instances`` instances each (the same ones every epoch); prediction
        uses every instance. ``None``: every instance always. 512 is above the bags of
        the classic sets (musk2's largest bags excepted) and of a few hundred patches, and cuts the slides of
        thousands.
    patience : int, default=10
        Epochs without a lower validation loss before training stops.
    min_epochs : int or None, default=None
        Epochs that always run: before them early stopping neither stops nor keeps weights, so ``n_epochs_``
        is at least this. ``None``: the larger of 10 and ``epochs // 4`` (12 of 50). A few dozen held-out
        bags often have their lowest loss after 1 to 3 epochs, when the network still predicts the class
        shares; trained again for that long it scores near chance on slide cohorts.
    validation_fraction : float, default=0.2
        Share of the training bags held out (stratified by the task: classes, events and times, or target
        quantiles) for early stopping; 0 trains on all bags for ``epochs`` epochs.
    device : str, default="auto"
        Where the network trains and predicts: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``; ``"auto"`` is CUDA when
        torch sees a GPU, else the CPU. Set it again on a fitted model to predict elsewhere.
    seeds : int, default=1
        Networks trained, each from its own seed (weights, dropout, order of bags, held-out split), whose
        predictions (and instance scores) are averaged: a deep ensemble, ``seeds`` times the cost of
        one. One by default: under a run's budget three cost more than they gained (docs/deep.md, "Seeds").
    centre_bags : bool, default=False
        Subtract each bag's own mean instance from its instances (training and prediction alike: a bag is
        centred on itself, so nothing is learnt from other bags). Where every slide of a patient carries the
        patient's offset (stain, scanner, site), a network can learn the patients instead of the witnesses
        (docs/deep.md, "Bags centred on their own mean"). It discards what a bag's mean says, so it is a
        choice of the search space and of the portfolio, not the default.
    random_state : int, optional
        Seeds the networks: the first from ``SeedSequence(random_state)``'s first word, the next from its
        following words.

    Attributes
    ----------
    networks_ : list of torch.nn.Module
        The trained networks, one a seed: each trained again on all bags for the epochs its early stopping
        chose.
    validation_loss_ : list of float
        The first network's held-out loss after each epoch run (empty when nothing was held out); its epochs
        are the ones reported to the driver's pruner.
    n_epochs_ : int
        The first network's epochs of the best held-out loss (``epochs`` when nothing was held out).
    time_limited_params_ : dict
        Empty when training ended by its own rules. In a driver's fit whose time ran out first
        (:func:`automil.time_left`), the training stopped short and kept what it had learned: ``epochs`` (the
        fewest any network ran) and ``min_epochs`` that make a new fit train as far as this one did.
    mean_, scale_ : ndarray of shape (n_features,)
        The training instances' standardization.
    covariate_mean_, covariate_scale_ : ndarray of shape (n_covariates,) or None
        The training bags' covariates' standardization (``None``: fitted without covariates).
    device_ : str
        The device the network was trained on.
    """

    accepts_streamed = True
    # Bytes the network holds per pair of a bag's instances, when its memory grows with the square of a bag
    # (its prediction batches are then bounded by their pairs, and --memory counts them: LearnerSpec.pair_bytes).
    pair_bytes = 0.0
    # What a model pickled before a parameter or attribute existed did: one network trained on every
    # instance, on the CPU, early stopping free to keep its first epoch, no covariates
    PICKLED_BEFORE = {"max_instances": None, "device": "auto", "min_epochs": 1, "seeds": 1, "centre_bags": False,
                      "covariate_mean_": None, "covariate_scale_": None}

    def __init__(self, *, learning_rate=2e-3, weight_decay=1e-4, hidden=128, dropout=0.25, epochs=50, batch_size=8,
                 max_instances=MAX_INSTANCES, patience=10, validation_fraction=0.2, device="auto", random_state=None,
                 min_epochs=None, seeds=1, centre_bags=False):
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.hidden = hidden
        self.dropout = dropout
        self.epochs = epochs
        self.batch_size = batch_size
        self.max_instances = max_instances
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.device = device
        self.random_state = random_state
        self.min_epochs = min_epochs
        self.seeds = seeds
        self.centre_bags = centre_bags

    def __init_subclass__(cls, **kwargs):
        # scikit-learn reads an estimator's parameters from its signature. A learner is a network's mixin on a
        # task's base, each __init__ taking its own keywords and passing the others on: the learner's
        # signature is all of them, so get_params, clone and LearnerSpec.build see every parameter.
        super().__init_subclass__(**kwargs)
        keywords = {}
        for base in cls.__mro__:
            init = vars(base).get("__init__")
            if init is not None and base is not object:
                for parameter in inspect.signature(init).parameters.values():
                    if parameter.kind is parameter.KEYWORD_ONLY:
                        keywords.setdefault(parameter.name, parameter)
        cls.__signature__ = inspect.Signature(list(keywords.values()))

    @classmethod
    def _get_param_names(cls):
        return sorted(inspect.signature(cls).parameters)

    def _network(self, n_features: int, n_outputs: int):
        raise NotImplementedError

    def _n_outputs(self) -> int:
        """The outputs of a bag the task's head reads (classes, time bins, one risk or value)."""
        raise NotImplementedError

    @staticmethod
    def _combine(outputs):
        """The networks' outputs as one prediction (:meth:`automil_deep.heads.Head.combine`)."""
        raise NotImplementedError

    def _step_bags(self) -> int:
        """Bags per training step."""
        return self.batch_size

    # ---- fitting -----------------------------------------------------------------------------------
    def _fit_standardization(self, bags) -> None:
        """The instances' and covariates' means and scales the batches standardize by (``mean_``, ``scale_``,
        ``covariate_mean_``, ``covariate_scale_``), from ``bags``."""
        from automil import instance_moments

        # a block at a time (streamed bags as read): the figures of X.astype(float64).mean / .std, no copy of X
        self.mean_, std = instance_moments(bags if isinstance(bags, StreamedBags) else bags.X)
        self.scale_ = np.where(std > 0, std, 1.0)
        self.covariate_mean_ = self.covariate_scale_ = None
        covariates = self._given_covariates(bags)
        if covariates is not None:
            self.covariate_mean_, std = covariates.mean(axis=0), covariates.std(axis=0)
            self.covariate_scale_ = np.where(std > 0, std, 1.0)

    def _train(self, bags, strata, head):
        """Train the networks on ``bags``: ``strata`` (an integer per bag) balance the held-out bags, and
        ``head(train, device)`` is the task's head for a training on the bags ``train``."""
        from automil_deep.training import minimum_epochs, resolve_device

        if self.max_instances is not None and not (isinstance(self.max_instances, int | np.integer)
                                                   and self.max_instances >= 1):
            raise ValueError(f"max_instances={self.max_instances!r}: give a whole number of instances of at "
                             "least 1 (or None for every instance)")
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int | np.integer) or self.seeds < 1:
            raise ValueError(f"seeds={self.seeds!r}: give a whole number of networks of at least 1")
        device = resolve_device(self.device)
        self._fit_standardization(bags)
        batches = self._batches(bags, device)
        seeds = np.random.SeedSequence(self.random_state).generate_state(self.seeds)
        left = time_left()  # a driver's fit ends in its time: the networks share what is left
        end = None if left is None else time.monotonic() + left
        self.networks_, self.time_limited_params_ = [], {}
        for member, seed in enumerate(int(seed) for seed in seeds):
            own = None if end is None else time.monotonic() + (end - time.monotonic()) / (self.seeds - member)
            # the first network reports its epochs to the driver's pruner; the others train blind to it
            network, training = self._fit_one(bags, strata, head, batches, device, seed, report=member == 0, end=own)
            self.networks_.append(network)
            if member == 0:
                self.validation_loss_, self.n_epochs_ = training.validation_loss, training.kept
            if training.out_of_time:
                ran = min(training.run, self.time_limited_params_.get("epochs", training.run))
                self.time_limited_params_ = {
                    "epochs": ran, "min_epochs": min(minimum_epochs(self.min_epochs, self.epochs), ran)}
        self.device_ = str(device)

    def _fit_one(self, bags, strata, head, batches, device, seed: int, report: bool, end: float | None):
        """One network from ``seed`` (its weights, dropout, order of bags and held-out split): early stopping
        on the held-out bags chooses its epochs, then it trains again on every bag for that many. By ``end``
        (a ``time.monotonic()`` time, ``None``: no limit) its prediction must be possible: early stopping's
        training stops short when the time runs out, and the network it chose is kept as it is when
        training again on every bag would not end in time. Returns the network and the first training."""
        from automil_deep.training import fit_network, minimum_epochs, seeded_torch

        train, validation = self._held_out(strata, seed, bags.groups)
        every = np.arange(len(strata))
        settings = dict(learning_rate=self.learning_rate, weight_decay=self.weight_decay,
                        batch_size=self._step_bags(), max_instances=self.max_instances, patience=self.patience,
                        rng=np.random.default_rng(seed))
        growth = len(strata) / max(len(train), 1)  # an epoch on every bag against one on the training bags
        with seeded_torch(seed, device):
            network = self._built(bags.n_features).to(device)
            training = fit_network(
                network, batches, head(train, device), train, validation, epochs=self.epochs,
                min_epochs=minimum_epochs(self.min_epochs, self.epochs), report=report, end=end,
                after_each_kept=growth if len(validation) else 0.0, **settings)
            again_seconds = training.epoch_seconds * (1 + growth * training.kept)  # and one epoch to predict
            if len(validation) and (end is None or time.monotonic() + again_seconds <= end):
                # Early stopping chose the number of epochs; the held-out bags are too many to waste on the
                # small MIL sets (abmil on musk1: 84 against 90 % accuracy), so a new network trains on all.
                network = self._built(bags.n_features).to(device)
                again = fit_network(network, batches, head(every, device), every, validation[:0],
                                    epochs=training.kept, end=end, **settings)
                training = training._replace(out_of_time=training.out_of_time or again.out_of_time)
            elif len(validation):
                training = training._replace(out_of_time=True)  # no time to train again: the first network stays
        return network, training

    def _validation_folds(self) -> int:
        """The folds early stopping's split draws, one of them held out (fewer than 2: nothing held out)."""
        return int(round(1 / self.validation_fraction)) if self.validation_fraction > 0 else 0

    def _held_out(self, strata, seed, groups=None):
        """The training and validation bags: ``automil.bag_folds`` over ``strata`` with ``1 /
        validation_fraction`` folds (over ``groups`` when the bags have them: a patient's slides on one side),
        fold 0 held out; no validation bags when that makes fewer than 2 folds (a fraction of 0), when a
        stratum has fewer bags than folds, or when the groups are too few to split."""
        n_splits = self._validation_folds()
        if n_splits < 2 or np.bincount(strata).min() < n_splits:
            return np.arange(len(strata)), np.array([], dtype=np.int64)
        try:
            folds = automil.bag_folds(strata, n_splits, seed, groups)
        except ValueError:  # too few groups, or a stratum in too few of them: train on every bag, as above
            return np.arange(len(strata)), np.array([], dtype=np.int64)
        return np.flatnonzero(folds != 0), np.flatnonzero(folds == 0)

    def _built(self, n_features: int):
        """A new network for the task, reading the covariates when the model was fitted with them."""
        from automil_deep.networks import WithCovariates

        network = self._network(n_features, self._n_outputs())
        if self.covariate_mean_ is None:
            return network
        return WithCovariates(network, len(self.covariate_mean_), self._n_outputs())

    @staticmethod
    def _given_covariates(bags) -> np.ndarray | None:
        """The bags' clinical covariates (finite floats: ``Bags`` checks them); ``None`` when they have none."""
        covariates = bags.covariates
        return None if covariates is None or covariates.shape[1] == 0 else covariates

    def _covariates(self, bags) -> np.ndarray | None:
        """The bags' covariates standardized as the training bags' were (``None`` for a model without)."""
        if self.covariate_mean_ is None:
            return None
        covariates = self._given_covariates(bags)
        given = 0 if covariates is None else covariates.shape[1]
        if given != len(self.covariate_mean_):
            raise ValueError(f"{type(self).__name__} was fitted with {len(self.covariate_mean_)} covariates; these "
                             f"bags have {given}")
        return (covariates - self.covariate_mean_) / self.covariate_scale_

    def _batches(self, bags, device):
        """The network's batches of ``bags`` (``Bags``, or :class:`~automil.streamed_bags.StreamedBags` read
        through ``take``), each batch's instances scaled by ``mean_`` (each bag's own mean with
        ``centre_bags``) and ``scale_`` in float32 as it is read (float16 instances upcast first): no copy of
        the bags' instances, and the rows of a batch the same on either kind of bags."""
        from automil_deep.training import Batches, matrix_rows

        take = bags.take if isinstance(bags, StreamedBags) else matrix_rows(bags.X, bags.offsets)
        centres = (bags.means() if self.centre_bags else self.mean_[None]).astype(np.float32)
        scale = self.scale_.astype(np.float32)

        def read(index, positions):
            # a float32 copy (take's rows are a fancy index's, never a view), then (x - mean) / scale in place
            rows = np.asarray(take(index, positions), dtype=np.float32)
            np.subtract(rows, centres[index] if self.centre_bags else centres[0], out=rows)
            return np.divide(rows, scale, out=rows)

        return Batches(read, bags.sizes, bags.n_features, device, pairs=self.pair_bytes > 0,
                       covariates=self._covariates(bags))

    # ---- prediction --------------------------------------------------------------------------------
    def _outputs(self, bags, instance_scores=True):
        """The networks' combined outputs per bag (``_combine``), and each instance's scores averaged over the
        networks (a list of ``(n_i, K)`` arrays; ``None`` each without ``instance_scores``)."""
        import torch

        from automil_deep.networks import Averaged
        from automil_deep.training import evaluate, resolve_device, thread_count

        device = resolve_device(self.device)
        threads = torch.get_num_threads()
        torch.set_num_threads(thread_count())
        try:
            # to the device: a model trained on a GPU predicts on the CPU, and back
            outputs, scores, _ = evaluate(Averaged(self.networks_, self._combine).to(device),
                                          self._batches(bags, device), np.arange(bags.n_bags),
                                          instance_scores=instance_scores)
        finally:
            torch.set_num_threads(threads)
        return outputs, scores

    # ---- pickling: weights as CPU arrays (a loaded model moves to its device when it predicts) ---------
    def __getstate__(self):
        state = dict(self.__dict__)
        if "networks_" in state:
            state["networks_"] = [{name: value.detach().cpu().numpy().copy()
                                   for name, value in network.state_dict().items()} for network in self.networks_]
        return state

    def __setstate__(self, state):
        state = dict(state)
        if "network_" in state:  # a model pickled before `seeds` holds its one network so
            state["networks_"] = [state.pop("network_")]
        weights = state.get("networks_")
        self.__dict__.update({**self.PICKLED_BEFORE, **state})
        if weights is not None:
            import torch

            self.networks_ = []
            for member in weights:
                network = self._built(self.n_features_in_)
                network.load_state_dict({name: torch.from_numpy(value) for name, value in member.items()})
                self.networks_.append(network.eval())
