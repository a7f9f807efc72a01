"""Where studies live: Optuna storages from the ``--storage`` option, shared by processes and machines.

A journal file (the default, safe for the processes of one machine) or any Optuna RDB URL (``sqlite:///``
for one process, ``postgresql://`` across machines).

A trial whose process dies is found in one way per storage kind. On an RDB storage each running trial
records Optuna's heartbeat (:func:`trial_heartbeat`); once it is older than ``GRACE_SECONDS`` the next
process to ask for a trial fails it and queues its parameters again (Optuna's retry callback).
A journal has no heartbeat table: :func:`automil.tune.optuna_records.fail_stale_trials` fails trials whose
process is gone (by pid on the same host, by an old ``heartbeat`` attribute on another).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import warnings

__all__ = ["DEFAULT_STORAGE", "open_storage", "has_heartbeat", "trial_heartbeat"]

DEFAULT_STORAGE = "journal:studies/automil.journal"

# A running trial records its heartbeat every HEARTBEAT_SECONDS; one silent for GRACE_SECONDS is failed and
# retried (once: a trial whose parameters kill their process twice is not tried a third time).
HEARTBEAT_SECONDS = 10
GRACE_SECONDS = 40
RETRIES = 1


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
    engine = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # the heartbeat and its retry
        if hasattr(optuna.storages, "RetryHeartbeatStaleTrialCallback"):
            retry = {"heartbeat_stale_trial_callback": optuna.storages.RetryHeartbeatStaleTrialCallback(RETRIES)}
        else:  # Optuna < 4.9
            retry = {"failed_trial_callback": optuna.storages.RetryFailedTrialCallback(RETRIES)}
        for attempt in range(attempts):
            try:
                return optuna.storages.RDBStorage(url, engine_kwargs=engine, heartbeat_interval=HEARTBEAT_SECONDS,
                                                  grace_period=GRACE_SECONDS, **retry)
            except sqlalchemy.exc.DBAPIError as error:
                raced = isinstance(error, sqlalchemy.exc.IntegrityError | sqlalchemy.exc.ProgrammingError) or (
                    "already exists" in str(error))
                if not raced or attempt == attempts - 1:
                    raise
                time.sleep(0.5 * (attempt + 1))


def has_heartbeat(storage) -> bool:
    """Whether ``storage`` keeps Optuna's trial heartbeats (the RDB storages automil opens)."""
    from optuna.storages._heartbeat import is_heartbeat_enabled

    return is_heartbeat_enabled(storage)


@contextlib.contextmanager
def trial_heartbeat(storage, trial_id: int):
    """Within the block a thread records the trial's heartbeat every ``HEARTBEAT_SECONDS``, as Optuna's
    ``study.optimize`` does (automil asks and tells instead); nothing without a heartbeat storage."""
    if not has_heartbeat(storage):
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
