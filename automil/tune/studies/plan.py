"""The Optuna studies of a run: its plan, their names, their stored folds and labels, the sampler and
pruner (between folds and between a fit's epochs) each process tunes them with, and the warm start that
seeds a new study.

Warm start across datasets: right after a learner's defaults, a study tries the best parameters of the
same learner's study on the most similar other dataset in the storage (the meta-learning step of
auto-sklearn, Feurer et al., 2015). Similar means near in :mod:`automil.tune.studies.meta_features`."""

from __future__ import annotations

import copy
import warnings
import zlib
from dataclasses import dataclass

import numpy as np

from automil.evaluation.folds import fold_digest
from automil.evaluation.folds_file import RunFolds
from automil.evaluation.protocol import Protocol
from automil.records import TrialAttr
from automil.tune.backend.optuna_trials import (
    best_trial,
    counts_toward_budget,
    fail_stale_trials,
    records,
    trial_record,
)
from automil.tune.options import TuneOptions
from automil.tune.schedule.ladder import LADDER
from automil.tune.studies.meta_features import MetaFeatures, meta_features, nearest
from automil.uris import shown_storage

__all__ = ["Plan", "study_name", "changed_data_note", "prepare_studies", "configure_study", "sampler",
           "FoldAndEpochPruner", "EPOCH_STEP", "META_FEATURES_ATTR", "warm_start", "warm_start_note",
           "WARM_START_ATTR"]

META_FEATURES_ATTR = "meta_features"  # the dataset's meta-features: what a warm start elsewhere compares
# A trial's intermediate values: each tuning fold's score at the fold's number (0 to k-1), and the epochs
# its first fit reported (automil.report_epoch) at EPOCH_STEP + epoch, so that the two never meet in one
# comparison.
EPOCH_STEP = 1_000_000
EPOCH_STARTUP_TRIALS = 5  # completed trials with a report at an epoch before a fit can be stopped there
# Epochs every fit runs before it can be stopped: a network's held-out score over its first epochs says little
# (on a few dozen held-out slides the deep learners' loss is often lowest after 1 to 3 epochs, while they still
# predict the class shares), so the pruner waits as long as their own early stopping does (MIN_EPOCHS in
# automil_deep's training).
EPOCH_WARMUP = 10


@dataclass
class Plan:
    """Everything a tuning process needs; picklable so that ``--jobs`` processes get the same plan."""

    dataset: str
    learners: list[str]
    options: TuneOptions
    folds: RunFolds  # its tuning folds are the studies' stored ones
    start: float  # time.time() when the run began
    portfolio: tuple = ()  # the portfolio's members for this data (automil.tune.portfolio.members.Member)
    chance: float | None = None  # what the metric scores by chance on these bags (automil.evaluation.chance)

    def __post_init__(self):
        if self.options.protocol == Protocol.AUTO:
            raise ValueError("a plan needs the protocol decided on its bags: pass options.for_data(bags), "
                             "not --protocol auto")

    @property
    def prior(self) -> tuple[str, ...]:
        """The learners of the portfolio, in the order of their first member: the order their first trials run."""
        return tuple(dict.fromkeys(m.learner for m in self.portfolio))

    @property
    def ladder(self) -> tuple[float, ...]:
        """The rungs every learner's defaults climb before trials on all bags: the hold-out protocol's."""
        return LADDER if self.options.protocol == Protocol.HOLDOUT else ()


def study_name(dataset: str, learner: str, split: int | None = None) -> str:
    """``DATASET/LEARNER``, or ``DATASET/LEARNER/outer-i`` for the tuning of nested outer split ``i``."""
    return f"{dataset}/{learner}" if split is None else f"{dataset}/{learner}/outer-{split}"


def changed_data_note(storage, dataset: str, source: str) -> str | None:
    """What to tell when the file ``source`` (named ``dataset``, ``STEM-DIGEST``) has no studies yet while
    other bags under its stem have: its content changed, so its studies start afresh."""
    from automil.data.datasets import same_stem

    tuned = {summary.study_name.split("/", 1)[0] for summary in storage.get_all_studies()}
    earlier = sorted(name for name in tuned if same_stem(dataset, name))
    if dataset in tuned or not earlier:
        return None
    return (f"{source}: these bags differ from those tuned before under the same name ({', '.join(earlier)}): "
            f"new studies {dataset}/...; the earlier ones stay as they are")


def _labels_digest(bags) -> str:
    import hashlib

    return hashlib.sha256("\x1f".join(map(str, bags.y)).encode()).hexdigest()[:16]


def prepare_studies(storage, dataset, bags, specs, options, folds: RunFolds) -> np.ndarray:
    """Create or load every study of the run; the studies' fold assignment is stored once and reused.

    The assignment of the first study that has one wins; a study made with other folds, another seed or
    another metric is an error (its scores could not be compared), never silently overwritten. ``folds``
    are the run's: drawn from the seed, or a folds file's (whose tuning folds must then be the stored ones).
    """
    import optuna

    labels = _labels_digest(bags)
    assignment, identity = None, None
    studies = []
    for spec in specs:
        for split in options.splits:
            name = study_name(dataset, spec.name, split)
            study = optuna.create_study(storage=storage, study_name=name, directions=list(options.directions),
                                        load_if_exists=True)
            attrs = study.user_attrs
            _check_objectives(study, attrs, options)
            if "fold_assignment" in attrs:
                _check_folds(name, attrs, options, folds)
                if attrs.get("labels_digest") != labels:
                    raise ValueError(f"study {name!r} was made on different bag labels than {dataset!r} has "
                                     "now (the data changed); use another --storage for a new study")
                if assignment is None:
                    assignment = np.asarray(attrs["fold_assignment"], dtype=np.int64)
                    identity = attrs["folds"]
            studies.append((study, spec, split))
    if assignment is None:
        assignment = folds.tuning
        # a seed of None marks folds from a file: a run drawing them from its seed is refused on them
        identity = {"n_splits": options.folds, "seed": None if folds.source else options.seed,
                    "digest": fold_digest(assignment)}
    record = {"dataset": dataset, "metric": options.metric, "seed": options.seed, "folds": identity,
              "labels_digest": labels, META_FEATURES_ATTR: meta_features(bags).to_dict()}
    if options.multi_objective:  # a single-objective study stays as it was: its metric says it all
        record["objectives"] = list(options.objectives)
    stored_assignment = assignment.tolist()
    for study, spec, split in studies:
        attrs = study.user_attrs
        protocol = options.protocol if split is None else Protocol.NESTED
        # The fold assignment goes last: other workers opening the study at the same moment check it only
        # once it is there, so by then every attribute they compare against is written.
        wanted = {**record, "learner": spec.name, "plugin": spec.plugin, "split": split, "protocol": protocol,
                  "fold_assignment": stored_assignment}
        for key, value in wanted.items():
            if attrs.get(key) != value:
                study.set_user_attr(key, value)
    return assignment


def _check_folds(name: str, attrs: dict, options, folds: RunFolds) -> None:
    """A stored study continues only on its own folds and metric: a folds file must give its fold
    assignment; a run without one must ask for its number of folds and seed."""
    where = f"study {name!r} in {shown_storage(options.storage)}"
    stored = attrs["folds"]
    if folds.source is not None:
        if stored["digest"] != fold_digest(folds.tuning):
            raise ValueError(f"{where} was tuned on other folds than {folds.source} gives (fold digest "
                             f"{stored['digest']}, the file's {fold_digest(folds.tuning)}): give the folds it was "
                             "made with, or another --storage for studies on these")
    elif stored["seed"] is None:
        raise ValueError(f"{where} was tuned on the folds of a folds file (fold digest {stored['digest']}): give "
                         "that file as --folds-file to continue it, or another --storage for a new study")
    elif (stored["n_splits"], stored["seed"]) != (options.folds, options.seed):
        raise ValueError(
            f"{where} was made with {stored['n_splits']} folds, seed {stored['seed']} and metric "
            f"{attrs.get('metric')}; this run asks for {options.folds} folds, seed {options.seed} and metric "
            f"{options.metric}. Use the same options to continue it, or another --storage for a new study")
    if attrs.get("metric") != options.metric:
        raise ValueError(f"{where} was made with metric {attrs.get('metric')}; this run asks for "
                         f"{options.metric}. Use the same --metric to continue it, or another --storage for a "
                         "new study")


def _check_objectives(study, attrs: dict, options) -> None:
    """An existing study must search the objectives this run asks for: Optuna keeps the directions it
    was made with, and values of other objectives cannot share a front."""
    if not (options.multi_objective or "objectives" in attrs or len(study.directions) > 1):
        return  # single objective both: the metric check of prepare_studies applies
    stored = attrs.get("objectives") or [attrs.get("metric", options.metric)]
    wanted = list(options.objectives) if options.multi_objective else [options.metric]
    directions = [d.name.lower() for d in study.directions]
    # names are compared once the study's record is whole (its fold assignment is written last)
    if directions != list(options.directions) or ("fold_assignment" in attrs and stored != wanted):
        raise ValueError(
            f"study {study.study_name!r} in {shown_storage(options.storage)} was made with the objective(s) "
            f"{', '.join(stored)} ({', '.join(directions)}); this run asks for {', '.join(wanted)}. Give the "
            "same --objective options to continue it, or another --storage for a new study")


def configure_study(study, plan: Plan, index: int):
    """A study as this process tunes it: its own sampler stream, the pruner over folds and epochs (single
    objective only), no trials left open by dead processes of this machine (an RDB storage also fails those of any
    machine by their heartbeat, before every ask)."""
    import optuna

    study.sampler = sampler(plan, study.study_name, index, len(study.get_trials(deepcopy=False)))
    if plan.options.multi_objective:  # Optuna prunes single-objective studies only (trial.report raises)
        study.pruner = optuna.pruners.NopPruner()
    else:
        study.pruner = FoldAndEpochPruner()
    fail_stale_trials(study)


class FoldAndEpochPruner:
    """The pruner of a single-objective study (Optuna calls ``prune``). Between folds, Optuna's Wilcoxon
    test of the trial's fold scores against the best trial's, paired by fold. Inside the first fold's fit,
    before any fold score, the median rule over epochs (as Optuna's MedianPruner, on the epoch steps only):
    after ``EPOCH_WARMUP`` epochs, a fit whose best held-out score so far is below the median of the
    completed trials' scores at the same epoch is stopped, once ``EPOCH_STARTUP_TRIALS`` of them reached it."""

    def __init__(self):
        import optuna

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            self._wilcoxon = optuna.pruners.WilcoxonPruner(p_threshold=0.1, n_startup_steps=2)

    def prune(self, study, trial) -> bool:
        if not any(step < EPOCH_STEP for step in trial.intermediate_values):
            return _epoch_rule(study, trial)
        try:
            best = _folds_only(study.best_trial)
        except ValueError:  # no completed trial yet
            return False
        return self._wilcoxon.prune(_StudyView(study.direction, best), _folds_only(trial))


@dataclass(frozen=True)
class _StudyView:
    """The study as the Wilcoxon test reads it: its direction and its best trial without epoch reports."""

    direction: object
    best_trial: object


def _folds_only(trial):
    """A copy of a frozen trial with only its fold scores as intermediate values."""
    view = copy.copy(trial)
    view.intermediate_values = {s: v for s, v in trial.intermediate_values.items() if s < EPOCH_STEP}
    return view


def _epoch_rule(study, trial) -> bool:
    """The median rule over the epochs of the trial's first fit (higher scores better)."""
    import optuna

    step = trial.last_step
    if step is None or step - EPOCH_STEP < EPOCH_WARMUP - 1:
        return False
    others = [t.intermediate_values[step] for t in study.get_trials(deepcopy=False, states=(
        optuna.trial.TrialState.COMPLETE,)) if step in t.intermediate_values]
    if len(others) < EPOCH_STARTUP_TRIALS:
        return False
    return max(trial.intermediate_values.values()) < float(np.median(others))


def sampler(plan: Plan, name: str, index: int, n_existing: int):
    import optuna

    # Seeded by the run's seed and by what is already in the study, so a resumed or parallel process
    # does not replay the random start-up proposals of another one.
    seed = int(np.random.SeedSequence([plan.options.seed, index, n_existing, zlib.crc32(name.encode())])
               .generate_state(1)[0])
    if plan.options.sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed)


# The study user attribute holding the warm-start decision, written once after the first counted trial.
WARM_START_ATTR = "warm_start"
# Why a source's point was not queued when its learner has no hyperparameters: nothing worth telling.
NO_PARAMETERS = "no parameters"


def warm_start(study, learner: str, dataset: str, storage) -> bool:
    """Queue the warm-start point of ``study`` once, after its first counted trial (the defaults).

    Returns whether the decision is made (now or by an earlier run or another process). The decision is
    stored as the study attribute ``warm_start`` (``source`` ``None``: no earlier study of the learner
    qualified; ``skipped``: why its point was not queued), and the queued trial carries
    ``warm_start_from``, so a rerun or another process does not queue it again.
    """
    trials = study.get_trials(deepcopy=False)
    if any(TrialAttr.WARM_START_FROM in t.user_attrs for t in trials):
        return True
    done = [t for t in trials if _counted(trial_record(t))]
    if not done:
        return False  # the defaults come first
    attrs = study.user_attrs
    if WARM_START_ATTR in attrs:
        return True
    # The current space is what this study's trials asked for: a space may depend on the data (a bound
    # from n_features), so the source's own distributions do not tell it.
    space = {name: distribution for t in done for name, distribution in t.distributions.items()}
    source = _source(storage, learner, dataset, attrs)
    if source is None:
        study.set_user_attr(WARM_START_ATTR, {"source": None})
        return True
    name, params = source
    if not params:  # a learner without hyperparameters: nothing to try
        study.set_user_attr(WARM_START_ATTR, {"source": name, "skipped": NO_PARAMETERS})
        return True
    point, problem = _within(params, space)
    if problem is None and any(t.params == point for t in trials):
        problem = f"its best parameters {point} were already tried here"
    if problem is not None:
        study.set_user_attr(WARM_START_ATTR, {"source": name, "skipped": problem})
        return True
    study.enqueue_trial(point, user_attrs={TrialAttr.WARM_START_FROM: name}, skip_if_exists=True)
    study.set_user_attr(WARM_START_ATTR, {"source": name, "params": point})
    return True


def _counted(trial) -> bool:
    return trial.finished and counts_toward_budget(trial)


def warm_start_note(learner: str, decision: dict | None) -> str | None:
    """The line a user reads about a study's stored warm-start ``decision`` (whichever process made
    it): its source, or why the source's point was skipped; ``None`` when there is nothing to say."""
    if not decision or decision.get("source") is None or decision.get("skipped") == NO_PARAMETERS:
        return None
    if "skipped" in decision:
        return f"warm start for {learner} from {decision['source']} skipped: {decision['skipped']}"
    return f"warm start for {learner} from {decision['source']}"


def _source(storage, learner: str, dataset: str, attrs: dict) -> tuple[str, dict] | None:
    """The main study of ``learner`` on the other dataset nearest to this one that has a completed
    trial, and the parameters of its best trial; ``None`` when there is none."""
    import optuna

    if META_FEATURES_ATTR not in attrs:
        return None
    here = MetaFeatures.from_dict(attrs[META_FEATURES_ATTR])
    candidates = {}
    for summary in optuna.get_all_study_summaries(storage, include_best_trial=False):
        other = summary.user_attrs
        if (other.get("learner") != learner or other.get("dataset") in (None, dataset)
                or other.get("split") is not None or META_FEATURES_ATTR not in other):
            continue  # outer-split studies, other learners, this dataset, studies without meta-features
        try:
            features = MetaFeatures.from_dict(other[META_FEATURES_ATTR])
        except ValueError:
            continue
        if features == here and other.get("labels_digest") == attrs.get("labels_digest"):
            continue  # the same bags under another name: their best parameters saw this dataset's folds
        candidates[summary.study_name] = features
    for name in nearest(here, candidates):
        source = optuna.load_study(study_name=name, storage=storage)
        best = best_trial(records(source))
        if best is not None:
            return name, best.params
    return None


def _within(params: dict, space: dict) -> tuple[dict, str | None]:
    """``params`` restricted to the parameters of ``space``, and the first value outside its
    distribution (``None`` when all lie inside). A parameter ``space`` lacks belongs to a branch of a
    conditional space this study has not taken yet: it is dropped, the sampler chooses it if asked."""
    point = {}
    for name, value in params.items():
        distribution = space.get(name)
        if distribution is None:
            continue
        try:  # Optuna's own membership test (steps, log scales, choices); it has no public one
            inside = distribution._contains(distribution.to_internal_repr(value))
        except ValueError:
            inside = False
        if not inside:
            return point, f"parameter {name} = {value!r} lies outside this study's {distribution}"
        point[name] = value
    if not point:
        return point, f"none of its parameters {sorted(params)} is in this study's space"
    return point, None
