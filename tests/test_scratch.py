"""Where the run's file of the instances goes: ``--scratch DIR`` (a bad one named in one line), and a notice when
it would sit on a memory-backed file system, told from the machine's own mount table."""

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from automil.cli.main import main
from automil.tune.driver import tune
from automil.tune.listener import Silent
from automil.tune.options import TuneOptions, read_study_file
from automil.tune.workers.processes import (
    MEMORY_FILE_SYSTEMS,
    RUN_DIRECTORY_PREFIX,
    file_system,
    release_instances,
    share_instances,
)
from automil_datasets.slides import write_slide_set

MOUNTS = "/proc/self/mounts"


def mount_table() -> dict:
    """Every mount point of this machine with the type of what is mounted there last (it hides the others)."""
    try:
        lines = Path(MOUNTS).read_text().splitlines()
    except OSError:
        pytest.skip("no mount table (not Linux)")
    return {fields[1]: fields[2] for fields in (line.split() for line in lines) if len(fields) >= 3}


def writable_memory_mount() -> Path:
    """A directory on tmpfs or ramfs meant for files (shared memory, a tmpfs /tmp, the user's runtime
    directory) that this process may write to."""
    for place in ("/dev/shm", tempfile.gettempdir(), f"/run/user/{os.getuid()}"):
        if Path(place).is_dir() and file_system(place) in MEMORY_FILE_SYSTEMS:
            try:
                tempfile.TemporaryFile(dir=place).close()
                return Path(place)
            except OSError:
                continue
    pytest.skip("no writable tmpfs directory on this machine")


def test_the_file_system_of_a_path_is_read_from_the_real_mount_table():
    table = mount_table()
    memory = [point for point, kind in table.items() if kind in MEMORY_FILE_SYSTEMS and "\\" not in point]
    if not memory:
        pytest.skip("no tmpfs mount on this machine")
    for point in memory:  # the mount point and a path below it that is no mount point of its own
        below = str(Path(point) / "automil-no-such-entry")
        assert file_system(point) in MEMORY_FILE_SYSTEMS and file_system(below) == table[point], point
    disks = [point for point, kind in table.items() if kind not in MEMORY_FILE_SYSTEMS and "\\" not in point]
    assert disks, "a machine with no file system but tmpfs"
    for point in disks:
        assert file_system(Path(point) / "automil-no-such-entry") == table[point], point


def test_escaped_and_stacked_mount_points_are_read_as_the_kernel_writes_them(tmp_path):
    table = tmp_path / "mounts"
    table.write_text("/dev/vda / ext4 rw 0 0\n"
                     "tmpfs /mnt/scratch\\040space tmpfs rw 0 0\n"
                     "/dev/vdb /mnt/scratch\\040space/disk xfs rw 0 0\n"
                     "/dev/vdc /srv ext4 rw 0 0\n"
                     "tmpfs /srv tmpfs rw 0 0\n")
    assert file_system("/mnt/scratch space/run/instances.npy", str(table)) == "tmpfs"
    assert file_system("/mnt/scratch space/disk/run", str(table)) == "xfs"
    assert file_system("/mnt/scratch spaceship", str(table)) == "ext4"  # a longer name, not below it
    assert file_system("/srv/data", str(table)) == "tmpfs"  # mounted over the disk: the later entry
    assert file_system("/anything", str(tmp_path / "no-table")) is None


def test_a_runs_file_on_a_memory_backed_file_system_is_said_in_one_line():
    scratch = Path(tempfile.mkdtemp(prefix="automil-test-", dir=writable_memory_mount()))
    heard = []
    rng = np.random.default_rng(0)
    bags = load_bags_from(rng)
    try:
        shared = share_instances(lambda: bags, scratch, heard.append)
        try:
            assert Path(shared.instances_file).parent.parent == scratch
        finally:
            release_instances(shared)
    finally:
        scratch.rmdir()  # empty: the run's directory went with release_instances
    assert len(heard) == 1 and "\n" not in heard[0]
    assert "memory-backed file system" in heard[0] and str(scratch) in heard[0] and "--scratch DIR" in heard[0]


def load_bags_from(rng):
    from automil import Bags

    return Bags(rng.standard_normal((300, 4)).astype(np.float32), np.arange(0, 301, 10), np.arange(30) % 2)


class Heard(Silent):
    """A listener that keeps the run's messages and, at the first (the data has been read and shared by
    then), the run files of every directory it watches."""

    def __init__(self, *directories):
        self.lines, self.directories, self.files = [], directories, None

    def message(self, line):
        self.lines.append(line)
        if self.files is None:
            self.files = [sorted(p.relative_to(d).parts[1] for p in d.glob(f"{RUN_DIRECTORY_PREFIX}*/*.npy"))
                          for d in self.directories]


@pytest.mark.parametrize("where", ["disk", "memory"])
def test_a_run_with_scratch_writes_its_file_there_and_nowhere_else_and_says_when_that_is_memory(where, tmp_path,
                                                                                              monkeypatch):
    written = write_slide_set(tmp_path / "slides", "trident", n_cases=6, n_features=8, seed=7)
    scratch = (tmp_path / "scratch" if where == "disk" else
               Path(tempfile.mkdtemp(prefix="automil-test-", dir=writable_memory_mount())))
    scratch.mkdir(exist_ok=True)
    temporary = tmp_path / "temporary"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    heard = Heard(scratch, temporary)
    options = TuneOptions(n_trials=1, timeout=None, folds=3, repeats=1, jobs=1, protocol="tuned", portfolio=None,
                          ensemble=False, track=False, storage=f"sqlite:///{tmp_path / 'studies.db'}",
                          labels=str(written.labels), scratch=str(scratch))
    try:
        rows = tune(str(written.features), ["bag-stats"], options, heard)
        assert not list(scratch.iterdir()) and not list(temporary.iterdir())  # removed when the run ended
    finally:
        if where == "memory":
            shutil.rmtree(scratch, ignore_errors=True)
    assert [row.status.has_figure for row in rows if row.learner == "bag-stats"] == [True]
    assert heard.files == [["instances.coords.npy", "instances.npy"], []]
    notices = [line for line in heard.lines if "memory-backed file system" in line]
    on_memory = where == "memory" or file_system(tmp_path) in MEMORY_FILE_SYSTEMS  # a tmpfs /tmp: both are
    assert len(notices) == int(on_memory) and all(str(scratch) in line for line in notices)


def test_a_missing_scratch_is_a_one_line_error_of_tune_and_run(tmp_path, capsys):
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    for command in ("tune", "run"):
        for scratch in (tmp_path / "missing", not_a_directory):
            target = ["--dataset", "musk1"] if command == "tune" else [str(study_file(tmp_path))]
            assert main([command, *target, "--no-track", "--scratch", str(scratch)]) == 1
            error = capsys.readouterr().err
            assert error == f"automil: error: --scratch: no such directory: {scratch}\n"


def test_a_scratch_this_user_cannot_write_to_is_named(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.access(locked, os.W_OK):
        pytest.skip("this user writes to a read-only directory (root)")
    with pytest.raises(ValueError, match="--scratch: cannot write to"):
        TuneOptions(scratch=str(locked)).check()


def study_file(folder: Path, options: str = "") -> Path:
    study = folder / "studies" / "grid.toml"
    study.parent.mkdir(exist_ok=True)
    study.write_text(f'[options]\n{options}\n[[study]]\ndataset = "musk1"\n')
    return study


def test_a_study_files_scratch_is_relative_to_the_file_and_the_command_line_wins(tmp_path):
    study = study_file(tmp_path, 'scratch = "disk"')
    (study.parent / "disk").mkdir()
    [(_, _, options)] = read_study_file(study)
    assert options.scratch == str(tmp_path / "studies" / "disk")
    [(_, _, options)] = read_study_file(study, {"scratch": str(tmp_path)})
    assert options.scratch == str(tmp_path)
