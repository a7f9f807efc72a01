"""Start-up of the commands that must stay fast (lazy imports): under 2 s (docs/published.md, section 4)."""

import subprocess
import sys

import pytest

TARGET_SECONDS = 2.0


@pytest.mark.parametrize("args", [["--help"], ["datasets"]], ids=" ".join)
def test_command_starts_within_2_seconds(args, timed):
    seconds = timed(f"automil {' '.join(args)}", lambda: subprocess.run(
        [sys.executable, "-m", "automil.cli", *args], check=True, capture_output=True), rounds=5)
    assert seconds < TARGET_SECONDS, f"automil {' '.join(args)}: {seconds:.2f} s"
