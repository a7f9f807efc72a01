"""What a store holds, read back as records: a :class:`StoredStudy` per parent run, a
:class:`StoredTrial` per trial run, and the one rule that picks a learner's study to show."""

from __future__ import annotations

from dataclasses import dataclass, field

from automil.records import PROCEDURE
from automil.records.protocol import Protocol
from automil.track.store.names import (
    KIND_TAG,
    LEARNER_TAG,
    PARENT_TAG,
    PROTOCOL_TAG,
    STATE_TAG,
    STATUS_TAG,
    STUDY_KIND,
    STUDY_TAG,
    TRIAL_KIND,
)

__all__ = ["StoredStudy", "StoredTrial", "read_studies", "read_trials", "latest_per_learner", "ranked_studies"]


@dataclass(frozen=True)
class StoredStudy:
    """One learner-dataset study as its parent run holds it.

    ``status`` is the driver's ("ok", "T/O", "failed", ...; "" before a result is logged), ``end_time``
    the run's end in ms (0 while it runs), ``metrics`` and ``tags`` the run's latest values.
    """

    dataset: str
    learner: str
    study: str
    status: str
    run_id: str
    end_time: int = 0
    metrics: dict = field(default_factory=dict)
    tags: dict = field(default_factory=dict)

    @property
    def protocol(self) -> Protocol:
        """How its headline figures were measured (nested when the tag is missing)."""
        return Protocol(self.tags.get(PROTOCOL_TAG, Protocol.NESTED))

    @property
    def optimistic(self) -> bool:
        """Whether its figures come from the tuned protocol (tuned and reported on the same folds)."""
        return self.protocol == Protocol.TUNED


@dataclass(frozen=True)
class StoredTrial:
    """One trial run: ``parent`` (its study's run id), ``state`` (COMPLETE, PRUNED, FAIL or T/O) and its
    metrics."""

    parent: str | None
    state: str
    metrics: dict = field(default_factory=dict)


def read_studies(store, datasets=None) -> list[StoredStudy]:
    """Every study (parent run) in ``store``, optionally only of some datasets."""
    out = []
    for dataset, experiment_id in store.dataset_experiments(datasets):
        for run in store.search(experiment_id, f"tags.`{KIND_TAG}` = '{STUDY_KIND}'"):
            tags = run.data.tags
            out.append(StoredStudy(dataset=dataset, learner=tags.get(LEARNER_TAG, run.info.run_name),
                                   study=tags.get(STUDY_TAG, ""), status=tags.get(STATUS_TAG, ""),
                                   run_id=run.info.run_id, end_time=run.info.end_time or 0,
                                   metrics=dict(run.data.metrics), tags=dict(tags)))
    return out


def read_trials(store, dataset: str) -> list[StoredTrial]:
    """Every trial run of ``dataset``'s experiment."""
    return [StoredTrial(parent=run.data.tags.get(PARENT_TAG), state=run.data.tags.get(STATE_TAG, ""),
                        metrics=dict(run.data.metrics))
            for run in store.search(store.experiment_id(dataset), f"tags.`{KIND_TAG}` = '{TRIAL_KIND}'")]


def latest_per_learner(studies: list[StoredStudy]) -> list[StoredStudy]:
    """One study per learner and dataset: the most recently finished (the first one met, of equals); in
    the order the pairs first appear. A resumed or repeated tune thus replaces what the report and the
    comparison show."""
    latest = {}
    for study in studies:
        key = (study.dataset, study.learner)
        if key not in latest or study.end_time > latest[key].end_time:
            latest[key] = study
    return list(latest.values())


def ranked_studies(studies: list[StoredStudy], metric: str = "balanced_accuracy") -> list[StoredStudy]:
    """The latest study of each learner, ranked by headline ``metric`` (balanced accuracy; a survival or
    regression run's own), best first; studies without a figure last, by name. The procedure's study
    (``automil``) comes first and has no rank."""

    def key(study):
        value = study.metrics.get(metric)
        return study.learner != PROCEDURE, value is None, -(value or 0.0), study.learner.lower()

    return sorted(latest_per_learner(studies), key=key)
