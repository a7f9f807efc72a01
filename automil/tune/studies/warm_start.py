"""Warm start across datasets: right after a learner's defaults, a study tries the best parameters of the
same learner's study on the most similar other dataset in the storage (the meta-learning step of
auto-sklearn, Feurer et al., 2015). Similar means near in :mod:`automil.tune.studies.meta_features`."""

from __future__ import annotations

from automil.records import TrialAttr, metric_task
from automil.tune.backend.optuna_trials import best_trial, counts_toward_budget, records, trial_record
from automil.tune.studies.meta_features import META_FEATURES_ATTR, MetaFeatures, nearest

__all__ = ["warm_start", "warm_start_note", "WARM_START_ATTR"]


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
    trial, of the same task (its head's parameters), and the parameters of its best trial; ``None`` when there
    is none."""
    import optuna

    if META_FEATURES_ATTR not in attrs:
        return None
    here = MetaFeatures.from_dict(attrs[META_FEATURES_ATTR])
    candidates = {}
    for summary in optuna.get_all_study_summaries(storage, include_best_trial=False):
        other = summary.user_attrs
        if (other.get("learner") != learner or other.get("dataset") in (None, dataset)
                or other.get("split") is not None or META_FEATURES_ATTR not in other
                or metric_task(other.get("metric")) != metric_task(attrs.get("metric"))):
            continue  # outer-split studies, other learners, this dataset, no meta-features, another task's head
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
