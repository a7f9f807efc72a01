"""FitWorker: real child processes, killed at their limits, replaced only when killed."""

import operator
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from driver_support import load_in_process

from automil import plugins
from automil.tune.workers.isolation import (
    BUDGET_MARGIN,
    FitError,
    FitMemoryExceeded,
    FitTimeout,
    FitWorker,
    WorkerDied,
)
from automil.tune.workers.processes import process_alive, process_identity
from automil.tune.workers.task_pool import OutOfTime, run_tasks


def gone(pid: int, wait: float = 10.0) -> bool:
    """True once no process ``pid`` exists (polls: the kernel reaps asynchronously)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if _zombie(pid):
            return True
        time.sleep(0.05)
    return False


def _zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


@pytest.fixture
def tasks(tmp_path, monkeypatch):
    load_in_process(monkeypatch, tmp_path / "records")
    from automil_testlearners import tasks

    yield tasks
    plugins.reset()


@pytest.fixture
def worker():
    with FitWorker(threads=1) as w:
        yield w


def test_worker_process_is_reused_across_tasks(worker):
    worker.set_data([10, 20, 30])
    assert worker.call(operator.getitem, 2, timeout=30) == 30
    pid = worker.pid
    assert [worker.call(operator.getitem, i, timeout=30) for i in range(3)] == [10, 20, 30]
    assert worker.pid == pid


def test_task_past_its_time_limit_is_killed_and_the_next_task_gets_a_new_process(worker, tasks):
    worker.set_data("payload")
    worker.call(tasks.nap, 0.0, timeout=30)
    pid = worker.pid
    with pytest.raises(FitTimeout):
        worker.call(tasks.nap, 60.0, timeout=1.0)
    assert gone(pid)
    assert worker.call(tasks.nap, 0.0, timeout=30) == "payload"  # the data is sent again
    assert worker.pid != pid


def test_spare_process_replaces_a_killed_one_at_once(tasks):
    with FitWorker(threads=1, spare=True) as worker:
        worker.set_data("payload")
        worker.call(tasks.nap, 0.0, timeout=60)
        first = worker.pid
        assert worker.spare_pid is None  # nothing killed yet: no spare
        with pytest.raises(FitTimeout):
            worker.call(tasks.nap, 60.0, timeout=1.0)
        assert gone(first)
        assert worker.call(tasks.nap, 0.0, timeout=60) == "payload"  # a fresh child; a spare beside it
        second, spare = worker.pid, worker.spare_pid
        assert spare is not None and second not in (first, spare)
        with pytest.raises(FitTimeout):
            worker.call(tasks.nap, 60.0, timeout=1.0)
        assert gone(second)
        assert worker.pid == spare and worker.spare_pid not in (None, first, second, spare)
        assert worker.call(tasks.nap, 0.0, timeout=60) == "payload"
    assert gone(spare)


def test_exception_in_task_is_reported_with_its_type_and_the_worker_lives_on(worker):
    worker.set_data(1.0)
    assert worker.call(operator.add, 1.0, timeout=30) == 2.0
    pid = worker.pid
    with pytest.raises(FitError, match="ZeroDivisionError") as error:
        worker.call(operator.truediv, 0.0, timeout=30)
    assert error.value.error_type == "ZeroDivisionError"
    assert "Traceback" in error.value.remote_traceback
    assert worker.pid == pid
    assert worker.call(operator.add, 2.0, timeout=30) == 3.0


def test_worker_that_dies_is_reported_and_replaced(worker):
    worker.set_data(3)
    with pytest.raises(WorkerDied, match="exit code 3"):
        worker.call(os._exit, timeout=30)
    worker.set_data(4)
    assert worker.call(operator.mul, 2, timeout=30) == 8


def test_task_over_the_memory_limit_is_killed(tasks):
    with FitWorker(threads=1, memory_limit=300 * 2**20) as worker:
        worker.set_data(1200 * 2**20)
        worker.start()
        pid = worker.pid
        with pytest.raises(FitMemoryExceeded, match="over the limit of 300 MiB"):
            worker.call(tasks.hold_memory, timeout=60)
        assert gone(pid)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim, read from /proc")
def test_the_memory_a_task_freed_goes_back_to_the_system_when_it_ends(worker, tasks):
    # 256 MB freed below a block the task keeps: without a trim glibc would keep them all
    worker.set_data(None)
    before = worker.call(tasks.private_bytes, timeout=30)
    worker.call(tasks.fragment_heap, 256 * 2**20, timeout=60)
    assert worker.call(tasks.private_bytes, timeout=30) - before < 64 * 2**20


def test_a_task_sees_the_time_it_was_given_and_run_tasks_gives_it_where_the_budget_ends_first(worker, tasks):
    worker.set_data(None)
    assert worker.call(tasks.time_left, timeout=30) is None  # no budget: only the timeout's kill
    seen = worker.call(tasks.time_left, timeout=30, budget=20.0)
    assert 0 < seen <= 20.0 * (1 - BUDGET_MARGIN)
    # run_tasks tells a task the budget only where it ends before the task's own timeout
    (_, within), = run_tasks([worker], [(tasks.time_left,)], timeout=30.0, budget=600.0)
    (_, cut), = run_tasks([worker], [(tasks.time_left,)], timeout=600.0, budget=30.0)
    assert within is None and 0 < cut <= 30.0


def test_run_tasks_with_its_budget_spent_starts_no_worker(tasks):
    worker = FitWorker(threads=1)
    try:
        worker.set_data("x")
        results = list(run_tasks([worker], [(tasks.nap, 0.0), (tasks.nap, 0.0)], timeout=30.0, budget=0.0))
        assert [index for index, _ in results] == [0, 1]
        assert all(isinstance(out, OutOfTime) and "not started" in str(out) for _, out in results)
        assert worker.pid is None  # no process started, so no library preloaded, for tasks that never ran
    finally:
        worker.close()


def test_run_tasks_goes_on_after_a_timeout(tasks):
    workers = [FitWorker(threads=1), FitWorker(threads=1)]
    try:
        for w in workers:
            w.set_data("x")
        jobs = [(tasks.nap, 0.0), (tasks.nap, 60.0), (tasks.nap, 0.0), (tasks.nap, 0.0)]
        results = dict(run_tasks(workers, jobs, timeout=2.0))
    finally:
        for w in workers:
            w.close()
    assert sorted(results) == [0, 1, 2, 3]
    assert isinstance(results[1], FitTimeout)
    assert [results[i] for i in (0, 2, 3)] == ["x", "x", "x"]


def test_worker_dies_with_its_parent_even_on_sigkill(tmp_path):
    script = textwrap.dedent("""
        import sys, time, operator
        from automil.tune.workers.isolation import FitWorker
        w = FitWorker()
        w.set_data(1)
        w.call(operator.add, 1, timeout=60)
        print(w.pid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        assert not gone(child, wait=0.2)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert gone(child)
    finally:
        parent.kill()
        parent.wait()


def test_process_identity_tells_live_from_dead_processes():
    assert process_alive(process_identity()) is True
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    identity = process_identity(dead.pid)
    assert process_alive(identity) is False
    assert process_alive("some-other-host:1:1") is None
