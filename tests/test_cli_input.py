"""Bad command-line input to ``automil tune``: one clear line on stderr, a non-zero exit, no traceback,
and nothing tuned.

The CLI runs in this process (``automil.cli.main``, exactly what the ``automil`` command calls) so that
the many cases stay cheap; the plugins are the built-in ones (tests/conftest.py).
"""

import pytest

from automil.cli import main

pytestmark = pytest.mark.timeout(120)

TUNE = ["tune", "--dataset", "digits-bags", "--folds", "3", "--repeats", "1", "--protocol", "tuned"]
UNTRACKED = [*TUNE, "--no-track"]


def run(capsys, argv):
    """Exit code and the stderr lines of ``automil ARGV``; argparse's own exits are caught too."""
    try:
        code = main(argv)
    except SystemExit as exit:
        code = exit.code
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, [line for line in err.splitlines() if line.strip()]


def error_line(lines) -> str:
    """The one error line (automil's ``automil: error:`` or argparse's ``automil tune: error:``)."""
    errors = [line for line in lines if ": error:" in line]
    assert len(errors) == 1, lines
    return errors[0]


@pytest.mark.parametrize("option, value, says", [
    ("--n-trials", "-3", "--n-trials must be positive"),
    ("--n-trials", "0", "--n-trials must be positive"),
    ("--timeout", "-1", "--timeout must be positive"),
    ("--fit-timeout", "0", "--fit-timeout must be positive"),
    ("--jobs", "0", "--jobs must be positive"),
    ("--repeats", "-2", "--repeats must be positive"),
    ("--folds", "1", "--folds must be at least 2"),
    ("--fit-memory", "0", "--fit-memory must be positive"),
])
def test_a_negative_or_zero_budget_is_one_error_line_naming_the_option(tmp_path, capsys, option, value, says):
    code, lines = run(capsys, [*UNTRACKED, "--storage", f"journal:{tmp_path / 's.journal'}", option, value])
    assert code == 1
    assert says in error_line(lines)
    assert not (tmp_path / "s.journal").exists(), "nothing is created before the options are checked"


@pytest.mark.parametrize("option, value", [("--n-trials", "abc"), ("--timeout", "soon"), ("--fit-memory", "lots"),
                                           ("--jobs", "2.5"), ("--metric", "f1"), ("--sampler", "grid")])
def test_a_malformed_value_is_argparse_s_error_line_naming_the_option(tmp_path, capsys, option, value):
    code, lines = run(capsys, [*UNTRACKED, "--storage", f"journal:{tmp_path / 's.journal'}", option, value])
    assert code == 2
    line = error_line(lines)
    assert option in line and value in line


def test_an_unknown_learner_is_one_line_listing_the_known_ones(tmp_path, capsys):
    code, lines = run(capsys, [*UNTRACKED, "--storage", f"journal:{tmp_path / 's.journal'}", "--learner", "no-such"])
    assert code == 1
    line = error_line(lines)
    assert "unknown learner 'no-such'" in line and "pdmisvm" in line


def test_an_unknown_dataset_is_one_line_listing_the_known_ones(tmp_path, capsys):
    code, lines = run(capsys, ["tune", "--dataset", "no-such-set", "--no-track", "--storage",
                               f"journal:{tmp_path / 's.journal'}"])
    assert code == 1
    line = error_line(lines)
    assert "no-such-set" in line and "digits-bags" in line


@pytest.mark.parametrize("storage, says", [
    ("journal:/proc/automil-test/studies.journal", "cannot create the study directory /proc/automil-test"),
    ("journal:{file}/studies.journal", "cannot create the study directory"),
    ("sqlite:////proc/automil-test/studies.db", "unable to open database file"),
], ids=["journal-under-proc", "journal-under-a-file", "sqlite-under-proc"])
def test_an_unwritable_study_store_is_one_error_line_before_any_tuning(tmp_path, capsys, storage, says):
    # Root may write anywhere else, so the paths are places no one can create files in.
    afile = tmp_path / "a-file"
    afile.write_text("")
    code, lines = run(capsys, [*UNTRACKED, "--learner", "sil", "--storage", storage.format(file=afile)])
    assert code == 1
    assert says in error_line(lines)
    assert not any("tuned" in line for line in lines)


def test_an_unreachable_postgresql_store_is_one_error_line(capsys):
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    code, lines = run(capsys, [*UNTRACKED, "--learner", "sil", "--storage",
                               "postgresql+psycopg2://nobody:secret@127.0.0.1:9/none"])
    assert code == 1
    line = error_line(lines)
    assert "127.0.0.1" in line and "refused" in line
    assert "secret" not in line, "the password in a storage URL is never printed"


def test_an_unwritable_tracking_store_given_explicitly_is_an_error_before_tuning(tmp_path, capsys):
    code, lines = run(capsys, [*TUNE, "--learner", "sil", "--n-trials", "1", "--timeout", "5", "--storage",
                               f"journal:{tmp_path / 's.journal'}", "--tracking-uri",
                               "sqlite:////proc/automil-test/mlflow.db"])
    assert code == 1, "a --tracking-uri that cannot be opened must stop the run, not silently drop tracking"
    assert "/proc/automil-test" in error_line(lines)


UNREACHABLE_TRACKING = "postgresql+psycopg2://nobody:secret@127.0.0.1:9/none"


@pytest.mark.parametrize("argv", [["report"], [*TUNE, "--learner", "sil", "--n-trials", "1"]],
                         ids=["report", "tune"])
def test_an_unreachable_postgresql_tracking_store_is_one_error_line_naming_it(tmp_path, capsys, argv):
    # MLflow alone would retry for about 100 s with a warning per attempt (the module's time-out is 120 s).
    code, lines = run(capsys, [*argv, "--tracking-uri", UNREACHABLE_TRACKING,
                               *(["--storage", f"journal:{tmp_path / 's.journal'}"] if "tune" in argv else [])])
    assert code == 1
    assert len(lines) == 1, lines
    line = error_line(lines)
    assert "tracking store postgresql+psycopg2://nobody:***@127.0.0.1:9/none" in line and "refused" in line
    assert "secret" not in line
    if "tune" in argv:
        from automil.tune.backend.optuna_storage import open_storage

        storage = open_storage(f"journal:{tmp_path / 's.journal'}")
        assert not any(storage.get_all_trials(study._study_id) for study in storage.get_all_studies()), \
            "no trial ran"

def test_automil_ui_never_prints_the_password_of_its_store():
    import subprocess
    import sys

    command = [sys.executable, "-m", "automil.cli", "ui", "--port", "9",
               "--tracking-uri", "postgresql+psycopg2://nobody:secret@127.0.0.1:9/none"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              start_new_session=True)
    try:
        first = server.stdout.readline()  # said while the server starts (it never answers here)
    finally:
        server.terminate()  # automil ui stops its server's process group
        rest = server.communicate(timeout=120)[0]
    assert first.startswith("automil: starting the MLflow UI")
    assert "nobody:***@127.0.0.1:9/none" in first and "secret" not in first + rest
