"""The tracking calls an MLflow server did not take, as plain records and as a backlog file of JSON lines (no
pickles) that ``automil track replay`` logs later.

A kept call names its study by what identifies it in MLflow (the study name, its dataset and learner), not by
a run id: a call kept before its study's parent run existed has none, and a replay finds the parent run by
the study's tag as the tracker always does.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from automil.evaluation.folds_file import RunFolds
from automil.records import LearnerResult, TrialRecord
from automil.track.store.values import jsonable

__all__ = ["Learner", "Study", "Kept", "FoldsText", "BacklogFile", "backlog_dir", "BACKLOG_DIR_ENV"]

BACKLOG_DIR_ENV = "AUTOMIL_MLFLOW_BACKLOG"
DEFAULT_BACKLOG_DIR = "mlflow-backlog"  # in the directory the run started in
FORMAT = 2  # the backlog file's format, in its first line


@dataclass(frozen=True)
class Learner:
    """What the tracker reads of a learner's spec (its tags and the run's description)."""

    name: str
    plugin: str = ""
    description: str = ""

    @classmethod
    def of(cls, spec) -> Learner:
        return cls(spec.name, getattr(spec, "plugin", "") or "", getattr(spec, "description", "") or "")


@dataclass(frozen=True)
class Study:
    """A study as ``Tracking.study_run`` opens its parent run."""

    name: str
    dataset: str
    learner: Learner
    tags: dict = field(default_factory=dict)


@dataclass
class Kept:
    """One kept call: the tracker method ``call`` named, the ``study`` whose parent run it is made on (in
    place of the run's id; for ``study_run`` the study it opens) and its other arguments by name. A value
    that is not plain data or a record below (a model, the bags, the trials a result's figures are drawn
    from) stays in memory only: a replay from the file makes the call without it, as its default."""

    call: str
    study: Study | None = None
    args: dict = field(default_factory=dict)

    def describe(self) -> str:
        subject = f"study {self.study.name}" if self.study is not None else f"dataset {self.args.get('dataset')}"
        trial = self.args.get("trial")
        if trial is not None:
            subject = f"trial {trial.number} of {subject}"
        return f"{self.call} of {subject}"

    def to_json(self) -> dict:
        written = {name: _written(value) for name, value in self.args.items()}
        return {"call": self.call, "study": None if self.study is None else asdict(self.study),
                "args": {name: value for name, value in written.items() if value is not _IN_MEMORY}}

    @classmethod
    def from_json(cls, row: dict) -> Kept:
        study = row.get("study")
        if study is not None:
            study = Study(study["name"], study["dataset"], Learner(**study["learner"]), study.get("tags") or {})
        return cls(row["call"], study, {name: _read(value) for name, value in row["args"].items()})


class FoldsText:
    """``folds.json`` as a replay from the file passes it on (what :meth:`RunFolds.to_json` wrote)."""

    def __init__(self, text: str):
        self.text = text

    def to_json(self) -> str:
        return self.text


_IN_MEMORY = object()  # a value the file does not hold


def _written(value):
    """An argument as the file holds it, tagged by its kind; :data:`_IN_MEMORY` for one it cannot."""
    if isinstance(value, TrialRecord):
        return {"trial": _trial_json(value)}
    if isinstance(value, LearnerResult):
        return {"result": value.to_dict()}
    if isinstance(value, RunFolds | FoldsText):
        return {"folds": value.to_json()}
    if value is None or isinstance(value, str | int | float | bool | dict | list):
        return {"value": value}
    return _IN_MEMORY


def _read(written: dict):
    """The inverse of :func:`_written`."""
    (kind, value), = written.items()
    return {"trial": _trial_from_json, "result": LearnerResult.from_dict, "folds": FoldsText,
            "value": lambda plain: plain}[kind](value)


def _trial_json(trial: TrialRecord) -> dict:
    row = asdict(trial)
    row["state"] = trial.state.value
    row["start"], row["end"] = (None if t is None else t.isoformat() for t in (trial.start, trial.end))
    row["values"] = list(trial.values)
    return row


def _trial_from_json(row: dict) -> TrialRecord:
    times = {key: None if row.get(key) is None else datetime.fromisoformat(row[key]) for key in ("start", "end")}
    return TrialRecord(**{**row, **times, "values": tuple(row.get("values") or ())})


class BacklogFile:
    """The kept calls of one process in ``path``: a first line naming the tracking URI, then one JSON
    record per call, oldest first. A call is appended when it is kept; the file is rewritten with what is
    left after the server took some, and removed when nothing is."""

    def __init__(self, path: Path, tracking_uri: str):
        self.path = Path(path)
        self.tracking_uri = tracking_uri

    @classmethod
    def for_process(cls, directory: Path, tracking_uri: str) -> BacklogFile:
        """This process's file in ``directory`` (named by host and pid, so that the workers of a cluster
        can share the directory)."""
        return cls(Path(directory) / f"{socket.gethostname()}-{os.getpid()}.jsonl", tracking_uri)

    def append(self, kept: Kept) -> None:
        new = not self.path.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as f:
            if new:
                f.write(self._header())
            f.write(json.dumps(kept.to_json(), default=jsonable) + "\n")

    def rewrite(self, kept: list[Kept]) -> None:
        if not kept:
            self.path.unlink(missing_ok=True)
            return
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(self._header() + "".join(json.dumps(k.to_json(), default=jsonable) + "\n"
                                                      for k in kept))
        os.replace(temporary, self.path)

    @classmethod
    def read(cls, path: Path) -> tuple[BacklogFile, list[Kept]]:
        """The file at ``path`` and its kept calls."""
        lines = Path(path).read_text().splitlines()
        header = json.loads(lines[0]) if lines else {}
        if header.get("automil_mlflow_backlog") != FORMAT:
            raise ValueError(f"{path} is not an automil MLflow backlog file (format {FORMAT})")
        return cls(path, header["tracking_uri"]), [Kept.from_json(json.loads(line)) for line in lines[1:] if line]

    def _header(self) -> str:
        return json.dumps({"automil_mlflow_backlog": FORMAT, "tracking_uri": self.tracking_uri}) + "\n"


def backlog_dir() -> Path:
    """Where runs keep their backlog files: ``$AUTOMIL_MLFLOW_BACKLOG``, else ``./mlflow-backlog``."""
    return Path(os.environ.get(BACKLOG_DIR_ENV) or DEFAULT_BACKLOG_DIR).expanduser().absolute()
