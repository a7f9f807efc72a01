"""Tuning through an outage of the MLflow server: a tracking call that finds the server away is kept (in
memory and in a backlog file) and logged, in order, once the server answers again; :func:`replay` logs a
backlog file that a run left behind.

MLflow's client retries a call to an absent server for minutes (7 retries, back-off factor 2, 120 s
time-out); a run of automil shortens that (:data:`HTTP_WAITS`), so that an outage costs a trial a few
seconds, and keeps what the server missed instead of waiting for it.
"""

from __future__ import annotations

import inspect
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from automil.records import TrackingBacklog
from automil.track.outage.backlog import BacklogFile, Kept, Learner, Study, backlog_dir
from automil.track.writing.tracker import Tracker
from automil.uris import shown_storage

__all__ = ["OutageTolerant", "open_tracker", "unreachable", "replay", "Replayed", "HTTP_WAITS"]

# MLflow's retry settings for automil's client, unless the user set them: about 3 s per call to a server that
# refuses connections (2 retries with back-off and jitter), 3 x 10 s to one that accepts and never answers.
# (The back-off factor is an integer to MLflow.)
HTTP_WAITS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
              "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}
# After the server missed a call, kept calls are tried again on the next tracking call this many seconds
# later, the pause doubling up to the longest while it stays away.
FIRST_PAUSE = 5.0
LONGEST_PAUSE = 60.0
PENDING = "pending:"  # the run id handed out for a study whose parent run the server has not created yet
STUDY_RUN = "study_run"  # the call that opens a study's parent run
PARENT_RUN = "parent_run_id"  # the argument naming the parent run a call is made on


def short_http_waits() -> None:
    """Set :data:`HTTP_WAITS` in this process's environment (and its children's), where not set."""
    for name, value in HTTP_WAITS.items():
        os.environ.setdefault(name, value)


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the server did not answer (connection refused or reset, time-out, 5xx after
    the client's retries), rather than that it answered with a refusal."""
    import requests

    return any(isinstance(e, (requests.exceptions.RequestException, ConnectionError, TimeoutError))
               for e in _chain(error))


def _chain(error: BaseException, longest: int = 20) -> list[BaseException]:
    """``error`` and the errors it was raised from, outermost first."""
    chain = [error]
    while len(chain) < longest and (chain[-1].__cause__ or chain[-1].__context__) is not None:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)
    return chain


class OutageTolerant:
    """The driver's ``Tracking`` on an MLflow store whose server may go away: calls go to ``tracker`` while
    the server answers; a call it misses, and every call after it, is kept in order (in memory and in
    ``file``) until a later attempt logs them. Nothing is logged twice: trials, results and parent runs are
    found by their study's tags, as the tracker always finds them.

    Parameters
    ----------
    tracker : automil.track.Tracker
    file : automil.track.outage.backlog.BacklogFile
        Where kept calls wait on disk (created with the first one, removed when none is left).

    Attributes
    ----------
    kept : list of Kept
        The calls not logged yet, oldest first.
    reason : str
        Why the server missed the last call.
    """

    def __init__(self, tracker: Tracker, file: BacklogFile):
        self.tracker = tracker
        self.file = file
        self.kept: list[Kept] = []
        self.reason = ""
        self._studies: dict[str, Study] = {}  # run id handed out (or a pending one) -> its study
        self._parents: dict[str, str] = {}  # study name -> its parent run's id in the store
        self._pause = FIRST_PAUSE
        self._next_attempt = 0.0

    @classmethod
    def open(cls, tracking_uri: str | None = None, directory: Path | None = None) -> OutageTolerant:
        """A tracker on ``tracking_uri`` (as :class:`~automil.track.Tracker`) with short HTTP waits, keeping
        its backlog in ``directory`` (default :func:`~automil.track.outage.backlog.backlog_dir`)."""
        short_http_waits()
        tracker = Tracker(tracking_uri)
        return cls(tracker, BacklogFile.for_process(directory or backlog_dir(), tracker.tracking_uri))

    def study_run(self, study_name: str, dataset: str, learner_spec, tags: dict | None = None) -> str:
        """The study's parent run, or while the server is away a pending id that later calls name it by."""
        study = Study(study_name, dataset, Learner.of(learner_spec), dict(tags or {}))
        run_id = self._run(Kept(STUDY_RUN, study)) or self._parents.get(study_name) or PENDING + study_name
        self._studies[run_id] = study
        return run_id

    def register_model(self, dataset: str, model_uri: str) -> str:
        """Not kept: registering again would add a version (the driver registers only a model it logged)."""
        return self.tracker.register_model(dataset, model_uri)

    def __getattr__(self, name: str):
        """Every other call of the tracker, made now or kept through an outage (see :meth:`_run`): its
        parent run id stands for its study, its other arguments are kept by name."""
        method = None if name.startswith("_") else getattr(Tracker, name, None)
        if not callable(method):
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        signature = inspect.signature(method)

        def call(*args, **kwargs):
            arguments = signature.bind(self.tracker, *args, **kwargs).arguments
            arguments.pop("self")
            run_id = arguments.pop(PARENT_RUN, None)
            return self._run(Kept(name, None if run_id is None else self._studies[run_id], arguments))

        call.__name__ = name
        return call

    def flush(self) -> None:
        """Try the kept calls now; a ``RuntimeError`` names those the server refused (they are dropped)."""
        dropped = self.log_kept()
        if dropped:
            raise RuntimeError(f"{len(dropped)} kept MLflow call(s) refused and dropped: {'; '.join(dropped)}")

    def backlog(self) -> TrackingBacklog | None:
        if not self.kept:
            return None
        return TrackingBacklog(len(self.kept), str(self.file.path), shown_storage(self.tracker.tracking_uri),
                               self.reason)

    def log_kept(self) -> list[str]:
        """Log the kept calls, oldest first, until the server misses one (the next attempt then waits
        longer); the file keeps what is left. A call the server refuses for another reason is dropped;
        returns those, each described with its error."""
        dropped = []
        while self.kept:
            try:
                self._apply(self.kept[0])
            except Exception as error:  # noqa: BLE001 - a refused call is reported by the caller
                if unreachable(error):
                    self._missed(error)
                    break
                dropped.append(f"{self.kept[0].describe()}: {type(error).__name__}: {error}")
            self.kept.pop(0)
        else:
            self._pause = FIRST_PAUSE
        self.file.rewrite(self.kept)
        return dropped

    def _run(self, kept: Kept):
        """``kept``'s call now, if nothing waits before it and the server answers; else kept (``None``)."""
        if not self.kept:
            try:
                return self._apply(kept)
            except Exception as error:
                if not unreachable(error):
                    raise
                self._missed(error)
        self.kept.append(kept)
        self.file.append(kept)
        if len(self.kept) > 1 and time.monotonic() >= self._next_attempt:
            self.flush()
        return None

    def _apply(self, kept: Kept):
        study = kept.study
        if kept.call == STUDY_RUN:
            self._parents[study.name] = self.tracker.study_run(study.name, study.dataset, study.learner,
                                                               study.tags)
            return self._parents[study.name]
        parent = {} if study is None else {PARENT_RUN: self._parent(study)}
        return getattr(self.tracker, kept.call)(**parent, **kept.args)

    def _parent(self, study: Study) -> str:
        """The study's parent run: as opened by this object, else found in the store, else opened now."""
        if study.name not in self._parents:
            found = self.tracker.find_study_run(study.name, study.dataset)
            if found is None:
                return self._apply(Kept(STUDY_RUN, study))
            self._parents[study.name] = found
        return self._parents[study.name]

    def _missed(self, error: BaseException) -> None:
        root = _chain(error)[-1]
        self.reason = f"{type(root).__name__}: {str(root).splitlines()[0] if str(root) else ''}".rstrip(": ")
        self._next_attempt = time.monotonic() + self._pause
        self._pause = min(2 * self._pause, LONGEST_PAUSE)


def open_tracker(tracking_uri: str | None):
    """A run's tracker: :class:`OutageTolerant` on ``tracking_uri``. A store that cannot be opened stops the
    run before any tuning, with one line saying why, since results that silently go untracked are lost to
    the UI and the report."""
    from automil.track.store.locations import default_tracking_uri, refused_login

    try:
        return OutageTolerant.open(tracking_uri)
    except Exception as error:
        refused = refused_login(error, tracking_uri or default_tracking_uri())
        if refused is not None:
            raise RuntimeError(refused) from None
        store = shown_storage(tracking_uri) if tracking_uri else "(default)"
        reason = str(error) if store in str(error) else f"cannot open the MLflow tracking store {store}: {error}"
        raise RuntimeError(f"{reason} (give a writable --tracking-uri, or --no-track to tune without tracking)"
                           ) from error


@dataclass
class Replayed:
    """What :func:`replay` did with one backlog file: calls ``logged``, ``left`` (the server still away,
    ``reason`` why) and ``dropped`` (refused, each with its error)."""

    path: Path
    logged: int
    left: int
    reason: str = ""
    dropped: list[str] = field(default_factory=list)


def replay(path: Path, tracking_uri: str | None = None) -> Replayed:
    """Log the kept calls of the backlog file ``path`` to ``tracking_uri`` (default: the store the run
    tracked to). The file is removed once all are logged, else rewritten with what is left; replaying a
    file again logs nothing twice."""
    short_http_waits()
    file, kept = BacklogFile.read(path)
    tolerant = OutageTolerant(Tracker(tracking_uri or file.tracking_uri), file)
    tolerant.kept = list(kept)  # log_kept empties its list; kept still counts what the file held
    dropped = tolerant.log_kept()
    left = len(tolerant.kept)
    return Replayed(Path(path), len(kept) - left - len(dropped), left, tolerant.reason if left else "", dropped)
