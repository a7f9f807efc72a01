"""The deep extra's torch range at its newest end: the deep learners' tests and contract in a venv that has
that release instead of the one CI installs (``.ci/torch-cpu.txt``, the lowest).

On demand (``pytest -m slow``): the venv shares this environment's packages but torch, which pip installs
into it from the package index (the default Linux build, several GB). ``AUTOMIL_TEST_TORCH`` names the
release (default: the newest the extra admits).
"""

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEEP_TESTS = ["tests/plugins/test_deep.py", "tests/test_contract.py"]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


def _newest_admitted() -> str:
    """The newest release below the extra's upper bound (``<2.16`` -> ``2.15.0``)."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["deep"]
    major, minor = re.search(r"<(\d+)\.(\d+)", extra[0]).groups()
    return f"{major}.{int(minor) - 1}.0"


def test_the_deep_learners_pass_their_tests_on_the_newest_torch(tmp_path):
    release = os.environ.get("AUTOMIL_TEST_TORCH", _newest_admitted())
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
    python = venv / "bin" / "python"
    # a constraints file of this machine's pip (a cap on torch) must not hide the release asked for
    env = os.environ | {"PIP_CONSTRAINT": os.devnull}
    subprocess.run([python, "-m", "pip", "install", "--quiet", f"torch=={release}"], check=True, env=env)
    version = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], check=True,
                             capture_output=True, text=True).stdout.strip()
    assert version.split("+")[0] == release
    run = subprocess.run([python, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-k",
                          "deep or abmil or mi-net or MI-Net or dsmil or transmil", *DEEP_TESTS],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert re.search(r"\b[1-9]\d* passed", run.stdout), run.stdout[-2000:]
