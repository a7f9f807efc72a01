"""Where studies live: Optuna storages from the ``--storage`` option, shared by processes and machines.

A journal file (the default, safe for the processes of one machine) or any Optuna RDB URL (``sqlite:///``
for one process, ``postgresql://`` across machines).

A trial whose process died is closed as failed when a run starts on its machine (the pid is gone,
:func:`automil.tune.backend.optuna_trials.fail_stale_trials`). Across machines, an RDB storage keeps Optuna's
heartbeat of each running trial (:func:`trial_heartbeat`): once it is older than ``GRACE_SECONDS`` the next
process to ask for a trial, anywhere, fails it and queues its parameters again (Optuna's retry callback).
A journal has no heartbeat table: there a trial of another machine is closed once its ``heartbeat``
attribute is old.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import uuid
import warnings

from automil.tune.backend.optuna_internals import heartbeat_enabled, replace_trial_creation, trial_template

__all__ = ["open_storage", "trial_heartbeat", "StorageUnavailable"]

# A running trial records its heartbeat every HEARTBEAT_SECONDS; one silent for GRACE_SECONDS is failed and
# retried (once: a trial whose parameters kill their process twice is not tried a third time).
HEARTBEAT_SECONDS = 10
GRACE_SECONDS = 40
RETRIES = 1

# How long a call waits for a database server that does not answer (a restart, a failover) before the run
# stops; AUTOMIL_STORAGE_WAIT overrides it (seconds).
STORAGE_WAIT_ENV = "AUTOMIL_STORAGE_WAIT"
STORAGE_WAIT_SECONDS = 90.0
# A trial's mark, so that a creation retried after a lost answer finds the trial it made instead of
# making a second one.
CREATION_ATTR = "automil:creation"


class StorageUnavailable(RuntimeError):
    """The study database did not answer within the wait; the message says what is kept and what to do."""


def open_storage(storage: str):
    """An Optuna storage from ``journal:PATH`` (a journal file, safe for local processes), a bare path
    (the same), or an RDB URL (``sqlite:///...`` for one process, ``postgresql://...`` across machines)."""
    from optuna.storages import JournalStorage

    if "://" in storage:
        return _rdb_storage(storage)
    path = os.path.abspath(os.path.expanduser(storage.removeprefix("journal:")))
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise ValueError(f"cannot create the study directory {directory}: {error.strerror}") from None
    if not os.access(directory, os.W_OK):
        raise ValueError(f"the study directory {directory} is not writable")
    return JournalStorage(_journal_backend(path))


def _rdb_storage(url: str, attempts: int = 3):
    """Optuna's RDB storage. Workers started together on a fresh database all create its tables and all
    but one fail (PostgreSQL: on the catalog's unique index; sqlite: "table ... already exists"): those
    try again once the tables exist."""
    import optuna
    import sqlalchemy.exc

    # sqlite makes a writer wait 5 s for another's lock and then fails the call, which ends the worker
    # (Optuna does not retry); processes sharing one study file on a slow disk can wait longer than that.
    sqlite = url.startswith("sqlite")
    # a server's pooled connections die when it restarts: each is checked before use and replaced
    engine = {"connect_args": {"timeout": 60}} if sqlite else {"pool_pre_ping": True}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # the heartbeat and its retry
        if hasattr(optuna.storages, "RetryHeartbeatStaleTrialCallback"):
            retry = {"heartbeat_stale_trial_callback": optuna.storages.RetryHeartbeatStaleTrialCallback(RETRIES)}
        else:  # Optuna < 4.9
            retry = {"failed_trial_callback": optuna.storages.RetryFailedTrialCallback(RETRIES)}
        for attempt in range(attempts):
            try:
                storage = optuna.storages.RDBStorage(url, engine_kwargs=engine, heartbeat_interval=HEARTBEAT_SECONDS,
                                                     grace_period=GRACE_SECONDS, **retry)
                return storage if sqlite else _patient(storage, url)
            except sqlalchemy.exc.DBAPIError as error:
                raced = isinstance(error, sqlalchemy.exc.IntegrityError | sqlalchemy.exc.ProgrammingError) or (
                    "already exists" in str(error))
                if not raced or attempt == attempts - 1:
                    raise
                time.sleep(0.5 * (attempt + 1))


# The calls Optuna makes on an RDB storage (directly, or through its cache) that are retried as they are:
# reads, and writes that set a value (doing one twice leaves the same row). The heartbeat is not among
# them: its thread must stop when the trial ends, and it tries again on its own.
_RETRIED_AS_THEY_ARE = (
    "create_new_study", "delete_study", "set_study_user_attr", "set_study_system_attr", "get_study_id_from_name",
    "get_study_name_from_id", "get_study_directions", "get_study_user_attrs", "get_study_system_attrs",
    "get_all_studies", "set_trial_param", "_set_trial_param", "get_trial_id_from_study_id_trial_number",
    "get_trial_number_from_id", "get_trial_param", "set_trial_intermediate_value", "set_trial_user_attr",
    "set_trial_system_attr", "get_trial", "get_all_trials", "_get_trials", "get_n_trials", "get_best_trial",
    "_get_best_trial_id", "_get_stale_trial_ids")


def _patient(storage, url: str):
    """``storage`` with every call retried with back-off while the database server does not answer, for
    up to ``AUTOMIL_STORAGE_WAIT`` seconds; then :class:`StorageUnavailable`.

    Two calls are not plain repeats: a trial creation whose answer was lost is looked up by its mark
    before it is made again, and a trial's final state that a lost answer had already stored is success.
    """
    import optuna

    wait = float(os.environ.get(STORAGE_WAIT_ENV, STORAGE_WAIT_SECONDS))
    for name in _RETRIED_AS_THEY_ARE:
        setattr(storage, name, _retrying(getattr(storage, name), url, wait))
    set_state = storage.set_trial_state_values

    def create_once(create):
        def made_once(study_id: int, template_trial=None):
            mark = uuid.uuid4().hex
            template = trial_template(template_trial, system_attrs={CREATION_ATTR: mark})
            tried = []

            def attempt():
                if tried:  # the last attempt may have made the trial before its answer was lost
                    made = [t for t in storage.get_all_trials(study_id, deepcopy=False)
                            if t.system_attrs.get(CREATION_ATTR) == mark]
                    if made:
                        return made[0]
                tried.append(True)
                return create(study_id, template)
            return _retrying(attempt, url, wait)()
        return made_once

    def set_state_once(trial_id: int, state, values=None):
        tried = []

        def attempt():
            try:
                return set_state(trial_id, state, values)
            except optuna.exceptions.UpdateFinishedTrialError:
                if tried and storage.get_trial(trial_id).state == state:
                    return True  # the last attempt stored it before its answer was lost
                raise
            finally:
                tried.append(True)
        return _retrying(attempt, url, wait)()

    replace_trial_creation(storage, create_once)
    storage.set_trial_state_values = set_state_once
    return storage


def _retrying(call, url: str, wait: float):
    """``call`` tried again after 0.5, 1, 2, 4, 8, then every 10 s while the database does not answer."""
    import functools

    @functools.wraps(call)
    def patient(*args, **kwargs):
        give_up = time.monotonic() + wait
        pause = 0.5
        while True:
            try:
                return call(*args, **kwargs)
            except Exception as error:
                if not _unreachable(error):
                    raise
                if time.monotonic() + pause > give_up:
                    from automil.uris import shown_storage

                    raise StorageUnavailable(
                        f"the study database {shown_storage(url)} did not answer for {wait:.0f} s "
                        f"({_root(error)}); every finished trial is kept: rerun the same command once it "
                        f"is back (or set {STORAGE_WAIT_ENV} to wait longer)") from None
                time.sleep(pause)
                pause = min(2 * pause, 10.0)
    return patient


def _unreachable(error: BaseException) -> bool:
    """Whether ``error`` (or what Optuna wrapped in it) is a lost or refused connection to the server."""
    import sqlalchemy.exc

    while error is not None:
        if isinstance(error, sqlalchemy.exc.OperationalError | sqlalchemy.exc.InterfaceError) or getattr(
                error, "connection_invalidated", False):
            return True
        error = error.__cause__ or error.__context__
    return False


def _root(error: BaseException) -> str:
    while error.__cause__ is not None or error.__context__ is not None:
        error = error.__cause__ or error.__context__
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


@contextlib.contextmanager
def trial_heartbeat(storage, trial_id: int):
    """Within the block a thread records the trial's heartbeat every ``HEARTBEAT_SECONDS``, as Optuna's
    ``study.optimize`` does (automil asks and tells instead); nothing without a heartbeat storage."""
    if not heartbeat_enabled(storage):  # a journal file
        yield
        return
    stop = threading.Event()

    def beat():
        while True:
            try:
                storage.record_heartbeat(trial_id)
            except Exception:  # noqa: BLE001 - the database away for a moment: the next beat tries again
                pass
            if stop.wait(HEARTBEAT_SECONDS):
                return

    thread = threading.Thread(target=beat, name=f"automil-heartbeat-{trial_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


# Journal operations after which the file is synced to disk (Optuna's JournalOperation codes): a trial
# finished (6), a study or trials were deleted (1, 10). Study attributes are rewritten by the next run if a
# crash loses them; everything a finished trial wrote before is flushed by the sync of its final state.
_DURABLE_OPERATIONS = frozenset({1, 6, 10})


def _journal_backend(path: str):
    """Optuna's journal file, with a lock and a sync policy made for many small writes.

    - The lock is ``fcntl.flock`` on ``PATH.automil.lock``: blocking, and released by the kernel when a
      holder is killed. Optuna's default symlink lock polls with back-off up to 1 s under contention and
      waits 30 s after a killed holder.
    - ``fsync`` only when a trial finishes, not after every attribute and report: a killed
      process loses nothing (its writes are in the OS cache); an OS crash can lose attributes of running
      trials, never a finished trial (the sync of its final state flushes all earlier writes).

    Only automil processes may write such a file concurrently (plain Optuna writers use another lock);
    readers such as optuna-dashboard are fine. Without ``fcntl`` (Windows) Optuna's backend is used.
    """
    from optuna.storages.journal import JournalFileBackend

    try:
        import fcntl
    except ImportError:
        return JournalFileBackend(path)

    class LockedJournalFile(JournalFileBackend):
        def append_logs(self, logs):
            text = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs).encode()
            durable = any(log.get("op_code") in _DURABLE_OPERATIONS for log in logs)
            with open(path + ".automil.lock", "ab") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or when we are killed
                journal = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    end = os.lseek(journal, 0, os.SEEK_END)
                    try:
                        rest = memoryview(text)
                        while rest:
                            rest = rest[os.write(journal, rest):]
                        if durable:
                            os.fsync(journal)
                    except OSError:
                        # A full disk can cut the write mid-line, and a partial line breaks every later
                        # read of the journal: take the write back whole (we still hold the lock).
                        os.ftruncate(journal, end)
                        raise
                finally:
                    os.close(journal)

    return LockedJournalFile(path)
