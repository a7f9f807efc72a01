"""The Optuna studies of a run: their names, their stored folds, labels and meta-features, checked when a
study is continued, and each study as a process tunes it (its sampler, its pruner, no stale trials)."""

from __future__ import annotations

import numpy as np

from automil.evaluation.folds import fold_digest
from automil.evaluation.folds_file import RunFolds
from automil.records.protocol import Protocol
from automil.tune.backend.optuna_trials import fail_stale_trials
from automil.tune.studies.meta_features import META_FEATURES_ATTR, meta_features
from automil.tune.studies.plan import Plan
from automil.tune.studies.pruner import FoldAndEpochPruner
from automil.tune.studies.sampler import seeded_sampler
from automil.tune.studies.trial_folds import inner_digest, inner_holdout
from automil.uris import shown_storage

__all__ = ["study_name", "changed_data_note", "prepare_studies", "configure_study", "INNER_ATTR"]

# The study attribute naming its trials' inner hold-out (its digest), absent or None for cross-validated trials.
INNER_ATTR = "inner_holdout"


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


def prepare_studies(storage, dataset, bags, specs, options,
                    folds: RunFolds) -> tuple[np.ndarray, np.ndarray | None]:
    """Create or load every study of the run; the studies' fold assignment is stored once and reused. Returns
    it with the main studies' inner hold-out (:func:`~automil.tune.studies.trial_folds.inner_holdout`: under
    the hold-out protocol on drawn folds, when the bags allow one; else ``None``).

    The assignment of the first study that has one wins; a study made with other folds, another seed, another
    metric or trials of another kind (an inner hold-out or cross-validation) is an error (its scores could not
    be compared), never silently overwritten. ``folds`` are the run's: drawn from the seed, or a folds file's
    (whose tuning folds must then be the stored ones).
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
    validation = None
    if options.protocol == Protocol.HOLDOUT and folds.source is None:
        validation = inner_holdout(bags.y, assignment, options.held_out, options.seed, bags.groups)
    _check_trials([s for s, _, split in studies if split is None], options, inner_digest(validation))
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
                  INNER_ATTR: inner_digest(validation) if split is None else None,
                  "fold_assignment": stored_assignment}
        for key, value in wanted.items():
            if attrs.get(key) != value:
                study.set_user_attr(key, value)
    return assignment, validation


def _check_trials(studies, options, inner: str | None) -> None:
    """A main study continues only with trials of its own kind: on the inner hold-out ``inner`` names (its
    digest), or cross-validated (``None``)."""
    for study in studies:
        attrs = study.user_attrs
        if "fold_assignment" in attrs and attrs.get(INNER_ATTR) != inner:
            raise ValueError(f"study {study.study_name!r} in {shown_storage(options.storage)} was tuned "
                             f"{_trial_kind(attrs.get(INNER_ATTR))}; this run's trials are {_trial_kind(inner)} "
                             '(docs/protocol.md, "One fit a trial at scale"): use another --storage for studies of '
                             "this kind")


def _trial_kind(inner: str | None) -> str:
    return "by cross-validation of the tuning folds" if inner is None else f"on the inner hold-out {inner}"


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

    study.sampler = seeded_sampler(plan, study.study_name, index, len(study.get_trials(deepcopy=False)))
    if plan.options.multi_objective:  # Optuna prunes single-objective studies only (trial.report raises)
        study.pruner = optuna.pruners.NopPruner()
    else:
        study.pruner = FoldAndEpochPruner()
    fail_stale_trials(study)
