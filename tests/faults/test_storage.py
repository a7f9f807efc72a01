"""The study storage failing under a run: a sqlite file locked by another connection, PostgreSQL stopped
for a few seconds, the disk of a journal file full. The run either waits it out or ends with a one-line
message; a rerun of the same command completes the study with nothing lost and nothing recorded twice."""

import contextlib
import sqlite3
import subprocess
import time

import pytest

from faults import harness
from faults.harness import Tune

pytestmark = pytest.mark.timeout(240)


def hold_exclusive_lock(path, seconds: float):
    """Another program holding an exclusive sqlite transaction on ``path`` for ``seconds``."""
    connection = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        connection.execute("BEGIN EXCLUSIVE")
        time.sleep(seconds)
        connection.execute("COMMIT")
    finally:
        connection.close()


def _ended_cleanly(result, cause: str = ""):
    """Either finished, or stopped with one 'automil: error:' line that names ``cause``, no traceback."""
    if result.returncode == 0:
        return True
    lines = [line for line in result.stderr.splitlines() if line.startswith("automil: error:")]
    assert result.returncode == 1 and len(lines) == 1, result.stderr
    assert cause.lower() in lines[0].lower(), f"the message does not say {cause!r}: {lines[0]}"
    assert "Traceback" not in result.stderr, result.stderr
    return False


@pytest.mark.parametrize("seconds", [2.0, 8.0], ids=["shorter-than-sqlite-default-wait", "longer"])
def test_a_sqlite_store_locked_by_another_connection_for_seconds_only_delays_the_run(tmp_path, site, seconds):
    # automil waits up to 60 s for sqlite's lock (sqlite's own default of 5 s would end the run at 8 s)
    database = tmp_path / "studies.db"
    tune = Tune(tmp_path, site, f"sqlite:///{database}", learners=("napper",), n_trials=5)
    tune.start()
    tune.wait_for_fit(3)
    hold_exclusive_lock(database, seconds)
    assert _ended_cleanly(tune.wait(), "database is locked"), f"the lock must only delay the run:\n{tune.stderr}"
    tune.rerun_completes("napper", 5, f"sqlite locked {seconds:.0f} s (finished)")


@pytest.mark.postgres
def test_postgresql_stopped_for_3_seconds_only_delays_the_run_and_the_rerun_finds_nothing_to_do(tmp_path, site,
                                                                                             postgres):
    # Every storage call that finds the server away is tried again for up to 90 s (AUTOMIL_STORAGE_WAIT,
    # docs/reliability.md): 3 s away must not stop the run.
    if not harness.script_manages(postgres):
        pytest.skip("the test PostgreSQL server is not the one .ci/postgres.sh manages: not stopping it")
    tune = Tune(tmp_path, site, postgres, learners=("napper",), n_trials=5)
    tune.start()
    tune.wait_for_fit(3)
    before = harness.snapshot(tune.trials("napper"))
    harness.postgres_script("stop")
    try:
        time.sleep(3)
    finally:
        harness.postgres_script("start")
    result = tune.wait()
    assert result.returncode == 0, f"the outage must only delay the run:\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    harness.assert_study_complete(tune.trials("napper"), 5, before)
    finished = harness.snapshot(tune.trials("napper"))
    trials = tune.rerun_completes("napper", 5, "PostgreSQL stopped 3 s (waited, finished)")
    assert harness.snapshot(trials) == finished, "the rerun finds the study complete and records nothing"


@contextlib.contextmanager
def small_disk(path, size: str):
    """A tmpfs of ``size`` mounted at ``path`` (root only; skipped where mounting is not allowed)."""
    path.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()})")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_full_disk_under_the_journal_stops_the_run_with_a_message_and_a_rerun_completes(tmp_path, site):
    with small_disk(tmp_path / "disk", "256k") as disk:
        journal = disk / "studies" / "automil.journal"
        tune = Tune(tmp_path, site, f"journal:{journal}", learners=("centroid",), n_trials=30)
        # The journal gets a few KiB; the filler takes the rest, so the disk fills during the run.
        journal.parent.mkdir()
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (256 * 1024 - 24 * 1024))
        result = tune.run()
        assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
        assert not _ended_cleanly(result, "No space left on device")
        assert harness.snapshot(tune.trials("centroid")), "some trials finished before the disk was full"
        filler.unlink()
        tune.rerun_completes("centroid", 30, "disk full under the journal (stopped)")
