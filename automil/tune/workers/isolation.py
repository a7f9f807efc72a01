"""Running fits in a killable worker process, with a time limit and an optional memory limit.

Solvers and BLAS calls do not return to Python, so neither signals nor threads can stop a fit: the only
reliable limit is a separate process that is killed. Starting an interpreter per fit would cost about a
second, so a :class:`FitWorker` keeps one process alive across fits and replaces it only after it was
killed (or died). The data is sent to the process once and cached there (bags mapped from a file,
:meth:`automil.Bags.mapped`, travel as the file's name: the child maps the same pages); each task then
carries only a function, its small arguments (fold indices, parameters) and the reply (predictions).

The child is ``python -m automil.tune.workers.isolation`` talking over two pipes with ``multiprocessing`` framing. It
dies with its parent (``PR_SET_PDEATHSIG`` on Linux, and an EOF check elsewhere), ignores Ctrl-C (the
parent decides), and runs with BLAS/OpenMP/numba threads capped so that several workers share the cores.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection

from automil.epochs import epoch_listener, time_limit
from automil.tune.workers.processes import die_with_parent, exit_reason, resident_bytes

__all__ = ["FitWorker", "FitTimeout", "FitMemoryExceeded", "FitError", "WorkerDied", "MEMORY_POLL_SECONDS",
           "BUDGET_MARGIN"]

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS")
MEMORY_POLL_SECONDS = 0.1  # how often the parent looks at the child's memory while it waits (with a limit)
HEARTBEAT_SECONDS = 30.0  # how often a waiting caller is told the fit is alive (a study's trial heartbeat)
# the share of a task's budget kept back from it: the result's pickling and transfer, the parent's wake-up
BUDGET_MARGIN = 0.03
_EPOCH = object()  # what collect() returns for an epoch report it answered: the task is still running


class FitTimeout(Exception):
    """The task ran past its time limit; its process was killed."""


class FitMemoryExceeded(Exception):
    """The worker's resident memory passed the limit; its process was killed."""


class WorkerDied(Exception):
    """The worker process ended without replying (a crash in native code, or killed from outside)."""


class FitError(Exception):
    """The task raised in the worker; ``error_type`` and ``remote_traceback`` say what and where."""

    def __init__(self, error_type: str, message: str, remote_traceback: str = ""):
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.remote_traceback = remote_traceback


class FitWorker:
    """A persistent child process that runs ``fn(data, *args)`` on request, killed at a time limit.

    Parameters
    ----------
    threads : int, optional
        Cap on BLAS/OpenMP/numba threads in the child (default: leave the environment alone).
    memory_limit : int, optional
        Resident memory cap of the child in bytes (Linux, read from ``/proc``); passing it kills the
        child and raises :class:`FitMemoryExceeded`.
    preload : callable, optional
        Run in a new child before its first task (``preload(None)``), e.g. to import the learners, so
        that start-up never counts against a task's time limit.
    startup_timeout : float
        How long a new child may take to start and preload.
    spare : bool
        Once a child has been killed, keep a second child started and preloaded, so that the next killed
        child is replaced at once (the replacement's start-up then overlaps the work instead of delaying
        the next task; a learner whose fit passed the limit once usually does again). None before the
        first kill: most runs kill nothing, and a spare costs a start-up (3.5 s of CPU with the built-in
        plugins).

    Notes
    -----
    The child inherits ``sys.path`` through ``PYTHONPATH`` and the environment (so it loads the same
    plugins as the parent). ``fn`` must be importable by name (a module-level function).
    """

    def __init__(self, threads: int | None = None, memory_limit: int | None = None,
                 preload: Callable | None = None, startup_timeout: float = 600.0, spare: bool = False):
        self.threads = threads
        self.spare = spare
        self._spare = None
        self._killed = False  # a child was killed: from then on a spare is kept
        self.memory_limit = memory_limit
        self.preload = preload
        self.startup_timeout = startup_timeout
        self._starting = False
        self._process: subprocess.Popen | None = None
        self._send: Connection | None = None
        self._recv: Connection | None = None
        self._data = None
        self._data_sent = False
        self._deadline = None
        self._on_epoch = None

    # ---- life cycle ----------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """The child's process id, or ``None`` before it starts and after it was killed."""
        return None if self._process is None else self._process.pid

    @property
    def spare_pid(self) -> int | None:
        """The process id of the spare child (see ``spare``), if one is running."""
        return None if self._spare is None else self._spare[0].pid

    @property
    def busy(self) -> bool:
        return self._deadline is not None

    @property
    def deadline(self) -> float | None:
        """The ``time.monotonic()`` by which the running task must end; ``None`` when idle."""
        return self._deadline

    @property
    def replies(self) -> Connection | None:
        """The connection a task's reply arrives on (for ``multiprocessing.connection.wait`` over workers)."""
        return self._recv

    def start(self):
        """Start the child now, without waiting for it (it is otherwise started by the first task)."""
        if self._process is not None:
            return
        self._process, self._send, self._recv = self._spare or self._launch()
        self._spare = self._launch() if self.spare and self._killed else None
        self._data_sent = False
        self._starting = True

    def _launch(self):
        """A new child with its pipes, already told to preload."""
        task_read, task_write = os.pipe()
        reply_read, reply_write = os.pipe()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        if self.threads is not None:
            env.update({name: str(self.threads) for name in THREAD_VARIABLES})
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "automil.tune.workers.isolation", str(task_read), str(reply_write),
                 str(os.getpid())],
                pass_fds=(task_read, reply_write), env=env, stdin=subprocess.DEVNULL, stdout=2,
                preexec_fn=die_with_parent if sys.platform == "linux" else None)
        finally:
            os.close(task_read)
            os.close(reply_write)
        send, recv = Connection(task_write, readable=False), Connection(reply_read, writable=False)
        send.send(("call", self.preload or _ready, (), False, None))
        return process, send, recv

    def wait_started(self):
        """Start the child if needed and wait until it has run ``preload`` (raises :class:`WorkerDied`)."""
        self.start()
        self._await_start()

    def _await_start(self):
        """Wait until a new child has started and run ``preload``."""
        if not self._starting:
            return
        self._starting = False
        self._deadline = time.monotonic() + self.startup_timeout
        try:
            self.result()
        except (FitTimeout, FitError, WorkerDied) as error:
            self.kill()
            raise WorkerDied(f"the worker process did not start: {error}") from None

    def set_data(self, data):
        """The object passed as first argument to every task (pickled once per child process; a run's
        bags pickle as the name of the file they are mapped from, so no child copies the matrix)."""
        self._data = data
        self._data_sent = False

    def kill(self):
        """Kill the child (SIGKILL) and reap it; the next task starts a fresh one."""
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.kill()
            self._killed = True
        self._process.wait()
        self._close_pipes()
        self._process = None
        self._deadline = None
        self._starting = False

    def close(self):
        """Ask the child to exit, then kill it if it does not within a second; the spare is killed."""
        if self._spare is not None:
            process, send, recv = self._spare
            process.kill()
            process.wait()
            send.close()
            recv.close()
            self._spare = None
        if self._process is None:
            return
        try:
            self._send.send(None)
            self._process.wait(timeout=1.0)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def _close_pipes(self):
        for connection in (self._send, self._recv):
            if connection is not None:
                connection.close()
        self._send = self._recv = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        for process in (self._process, self._spare and self._spare[0]):
            if process is not None and process.poll() is None:
                process.kill()

    # ---- tasks ---------------------------------------------------------------------------------------
    def submit(self, fn: Callable, *args, timeout: float | None = None,
               on_epoch: Callable[[int, float], bool] | None = None, budget: float | None = None):
        """Send one task; collect it with :meth:`result`. ``timeout`` counts from when the child has started
        (a replacement's start is not the task's time). ``on_epoch`` answers
        the task's :func:`automil.report_epoch` calls (true: stop the fit, a :class:`FitError` FitPruned).
        ``budget``: the seconds the task should end in (:func:`automil.time_left` inside it, less
        :data:`BUDGET_MARGIN` for sending its result back), where an anytime learner may stop early instead of
        being killed at ``timeout``; ``None``: no limit but the timeout's kill."""
        if self.busy:
            raise RuntimeError("this worker is still running a task")
        for attempt in (0, 1):
            try:
                self.start()
                self._await_start()
                if not self._data_sent:
                    self._send.send(("data", self._data))
                    self._data_sent = True
                self._send.send(("call", fn, args, on_epoch is not None,
                                 None if budget is None else budget * (1 - BUDGET_MARGIN)))
                break
            except (BrokenPipeError, OSError, WorkerDied) as error:  # an idle child died: replace it once
                self.kill()
                if attempt:
                    raise WorkerDied(f"the worker process could not be started: {error}") from None
        self._deadline = float("inf") if timeout is None else time.monotonic() + timeout
        self._on_epoch = on_epoch

    def result(self, heartbeat: Callable | None = None, heartbeat_every: float = HEARTBEAT_SECONDS):
        """Wait for the task's reply and return it, or raise.

        Raises :class:`FitTimeout` or :class:`FitMemoryExceeded` (the child is killed first),
        :class:`WorkerDied`, or :class:`FitError` for an exception inside the task. ``heartbeat`` is
        called every ``heartbeat_every`` seconds while waiting (to tell a shared store the work is alive).
        """
        next_beat = time.monotonic() + heartbeat_every
        reply = _EPOCH
        while reply is _EPOCH:
            while not self.ready(min(next_beat, self._deadline) - time.monotonic()):
                if heartbeat is not None and time.monotonic() >= next_beat:
                    heartbeat()
                    next_beat = time.monotonic() + heartbeat_every
            reply = self.collect()
        return reply

    def ready(self, wait_seconds: float) -> bool:
        """True when the reply can be collected (or the time or memory limit already passed)."""
        wait_seconds = max(0.0, wait_seconds)
        if self.memory_limit is not None:
            wait_seconds = min(wait_seconds, MEMORY_POLL_SECONDS)
        if self._recv.poll(wait_seconds):
            return True
        return time.monotonic() >= self._deadline or self._over_memory()

    def collect(self):
        """The reply of a task for which :meth:`ready` returned True."""
        if self._recv.poll(0):
            try:
                status, payload = self._recv.recv()
            except (EOFError, OSError):
                code = self._process.wait()
                self._process = None
                self._close_pipes()
                self._deadline = None
                raise WorkerDied(f"the worker process ended with {exit_reason(code)} during the fit") \
                    from None
            if status == "epoch":  # the fit goes on once answered
                self._send.send(bool(self._on_epoch(*payload)))
                return _EPOCH
            self._deadline = None
            if status == "ok":
                return payload
            raise FitError(*payload)
        rss = resident_bytes(self.pid)
        self.kill()
        self.start()  # the replacement starts up while the caller records the outcome
        if self.memory_limit is not None and rss > self.memory_limit:
            raise FitMemoryExceeded(f"the fit used {rss / 2**20:.0f} MiB, over the limit of "
                                    f"{self.memory_limit / 2**20:.0f} MiB; its process was killed")
        raise FitTimeout("the fit ran past its time limit; its process was killed")

    def call(self, fn: Callable, *args, timeout: float | None = None, heartbeat=None, on_epoch=None,
             budget: float | None = None):
        """:meth:`submit` then :meth:`result`."""
        self.submit(fn, *args, timeout=timeout, on_epoch=on_epoch, budget=budget)
        return self.result(heartbeat=heartbeat)

    def _over_memory(self) -> bool:
        return self.memory_limit is not None and resident_bytes(self.pid) > self.memory_limit


# ---- the child -------------------------------------------------------------------------------------
def _ready(data):
    """The default preload: nothing beyond starting the interpreter."""

def _serve(tasks: Connection, replies: Connection, parent_pid: int):
    """The worker loop: cache the data, run calls, reply ``("ok", result)`` or ``("error", ...)``."""
    # Ctrl-C and SIGTERM reach the whole process group: the parent decides (it closes the trial as
    # interrupted and kills this process), so a fit is never recorded as failed by a stop signal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.getppid() != parent_pid:  # the parent died before PR_SET_PDEATHSIG took effect
        return
    data = None
    trim = _malloc_trim()

    def ask(epoch: int, score: float) -> bool:  # an epoch report of a call whose caller answers them
        replies.send_bytes(pickle.dumps(("epoch", (epoch, score)), protocol=pickle.HIGHEST_PROTOCOL))
        return tasks.recv()  # true: stop the fit
    while True:
        try:
            message = tasks.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        kind, *payload = message
        if kind == "data":
            data = payload[0]
            continue
        fn, args, epochs, budget = payload
        try:
            with warnings.catch_warnings(), epoch_listener(ask if epochs else None), time_limit(budget):
                warnings.simplefilter("ignore")
                reply = ("ok", fn(data, *args))
        except Exception as error:  # noqa: BLE001 - reported to the parent, the worker lives on
            reply = ("error", (type(error).__name__, str(error), traceback.format_exc()))
        try:
            reply = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:  # noqa: BLE001 - an unpicklable result is the task's fault
            reply = pickle.dumps(("error", (type(error).__name__, f"the result cannot be sent back: {error}", "")))
        try:
            replies.send_bytes(reply)
        except OSError:
            return
        del reply
        if trim is not None:
            trim(0)


def _malloc_trim():
    """The C library's ``malloc_trim``, which gives the heap memory freed so far back to the system; ``None``
    where it has none (macOS, musl). Why the worker calls it after every task: glibc keeps freed heap pages
    that a live allocation above them pins, so a worker would stay at the high-water mark of every fit it
    ran (after TransMIL's fit on 10^5 instances, 840 MB private where 360 MB are in use), and a run's
    memory, summed over its workers, would be mostly memory none of them uses."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False),
           int(sys.argv[3]))
