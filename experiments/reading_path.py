"""How many modules a reader follows from ``automil tune`` to its leaderboard, and which are entered twice.

Runs the command in this process under a profiler that sees every call into automil's own modules (the
core, the command line and the built-in plugins; the fits' worker processes are not followed) and prints:

- the modules entered, in the order the run first enters them;
- each *re-entry*: a call into a module that is already on the call stack below another module (a call
  back up the layers, e.g. into the driver from the loop it called), with the caller. A reader following
  the run opens such a module a second time; zero re-entries means every module is read once.
- apart from them, the *callbacks handed down*: a lambda, comprehension or inner function called by a
  lower module while the function that defines it is still running (a sort key, a hook's ``register``). The
  reader reads it where it is written, in the function that hands it down, so it is no re-entry.

    python experiments/reading_path.py                       # automil tune --dataset fox, 3 trials, untracked
    python experiments/reading_path.py -- --dataset digits-bags --n-trials 2 --no-track --timeout none
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OWN = (ROOT / "automil", ROOT / "plugins")
DEFAULT = ["--dataset", "fox", "--learner", "MI-SVM", "--learner", "nsk", "--n-trials", "3", "--folds", "3",
           "--repeats", "1", "--jobs", "1", "--timeout", "none", "--no-track"]


def module_of(filename: str) -> str | None:
    """``automil/tune/driver.py`` for a file of automil's own, else ``None``."""
    path = Path(filename)
    for top in OWN:
        if path.is_relative_to(top):
            return str(path.relative_to(ROOT))
    return None


class PathRecorder:
    """Per thread, the stack of frames by own module (``None``: a library's frame, which a callback through
    a library into the module that called it does not count as a re-entry)."""

    def __init__(self):
        self.first: dict[str, int] = {}
        self.reentries: Counter = Counter()
        self.handed_down: Counter = Counter()
        self.stacks: dict[int, list[tuple[str | None, str]]] = {}

    def __call__(self, frame, event, arg):
        stack = self.stacks.setdefault(threading.get_ident(), [])
        if event == "call":
            module = None if frame.f_code.co_name == "<module>" else module_of(frame.f_code.co_filename)
            top = next((m for m, _ in reversed(stack) if m is not None), None)  # a library between is skipped
            name = frame.f_code.co_qualname
            if module is not None and module != top:
                self.first.setdefault(module, len(self.first))
                if any(m == module for m, _ in stack):
                    definer = name.rsplit(".<locals>.", 1)[0] if ".<locals>." in name else None
                    handed = any(m == module and f == definer for m, f in stack)
                    (self.handed_down if handed else self.reentries)[(module, name, top)] += 1
            stack.append((module, name))
        elif event == "return" and stack:
            stack.pop()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tune_args", nargs="*", help="arguments of automil tune (after --)")
    args = parser.parse_args(argv)
    from automil.cli.main import main as automil

    recorder = PathRecorder()
    with tempfile.TemporaryDirectory(prefix="automil-path-") as tmp:
        command = ["tune", *(args.tune_args or DEFAULT), "--storage", f"journal:{Path(tmp) / 'studies.journal'}"]
        threading.setprofile(recorder)
        sys.setprofile(recorder)
        try:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                code = automil(command)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    leaderboard = [line for line in out.getvalue().splitlines() if line.startswith(("learner", "automil"))]
    print(f"automil {' '.join(command[:-2])}: exit {code}, {len(recorder.first)} modules entered, "
          f"{len(recorder.reentries)} re-entries ({sum(recorder.reentries.values())} calls), "
          f"{len(recorder.handed_down)} callbacks handed down")
    print("\n".join(leaderboard[:2]))
    for module, order in sorted(recorder.first.items(), key=lambda item: item[1]):
        print(f"{order + 1:>3}  {module}")
    for (module, function, caller), calls in recorder.reentries.most_common():
        print(f"re-entry: {module} ({function}) called from {caller} ({calls} calls)")
    for (module, function, caller), calls in recorder.handed_down.most_common():
        print(f"handed down: {module} ({function}) called from {caller} ({calls} calls)")


if __name__ == "__main__":
    main()
