"""Each learner's memory factor (``LearnerSpec.memory_factor``) measured: the peak memory of a fit at its defaults
beside its standardized training instances, as a multiple of those instances (docs/budget.md, "Memory").

    python experiments/memory_factors.py [--learner NAME ...] [--bags 500 2000] [--instances 100] [--features 64]
                                         [--limit 240] [--cap 6e9] [--jobs 1] [--seed 0] [--out DIR]

For every registered learner (``--learner`` to choose) and every number of bags, a fresh Python process
generates a float32 bag set with a fixed seed (bags of ``--instances`` standard normal instances in
``--features`` dimensions, half of them positive with 1 to 3 witnesses shifted by 3 along one direction),
builds ``Standardized(spec.build())`` (the learner's defaults behind the standardizer every fit goes through),
fits it once on 20 bags (imports, numba compilation, torch's start-up), then resets the process's peak
resident memory (``/proc/self/clear_refs``, VmHWM), reads its resident memory (VmRSS) and fits on every bag.
The working set is the peak less that resident memory: the standardized copy of the instances (in their
dtype, float32, which the estimate counts as the 1 of ``1 + memory_factor``) and the learner's own, so

    factor = working / instance bytes - 1.

The parent process watches each fit's peak from ``/proc/<pid>/status``: a fit still running after ``--limit``
seconds, or past ``--cap`` bytes resident, is killed and its figure is the peak so far ("at least").
Two sizes tell a working set in proportion to the instances (the same factor) from a fixed one (a factor
that falls) or one that grows faster (a Gram matrix over bags or instances: a factor that rises).

Prints one markdown table (docs/benchmarks.md, "Memory of a fit, learner by learner") and writes it as JSON
to ``--out`` (``/work/bench-out/memory`` unless given). Memory figures do not depend on the CPU's load, only
the fits stopped at the limit do; run ``--jobs 2`` on a machine with the memory for two fits at once.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

WARMUP_BAGS = 20
GROWTH_TOLERANCE = 1.25  # the larger size's factor above the smaller's by more than this: faster than linear


def status_bytes(pid: int | str, field: str) -> int:
    """``field`` (VmRSS, VmHWM) of ``/proc/<pid>/status``, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def make_bags(n_bags: int, n_instances: int, n_features: int, seed: int):
    """A float32 bag set: standard normal instances, every other bag positive with 1 to 3 witnesses shifted by
    3 along one unit direction."""
    import numpy as np

    import automil

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_bags * n_instances, n_features), dtype=np.float32)
    direction = rng.standard_normal(n_features).astype(np.float32)
    direction /= np.linalg.norm(direction)
    y = np.arange(n_bags) % 2
    for bag in np.flatnonzero(y):
        rows = bag * n_instances + rng.choice(n_instances, size=int(rng.integers(1, 4)), replace=False)
        X[rows] += 3.0 * direction
    return automil.Bags(X, np.arange(n_bags + 1) * n_instances, y)


def child(args) -> None:
    """One measurement, in this fresh process: warm up, reset the peak, report the resident memory, fit."""
    import ctypes
    import gc

    import automil
    from automil.evaluation.standardized import Standardized
    from automil.tune.schedule.memory import instance_bytes

    bags = make_bags(args.child_bags, args.instances, args.features, args.seed)
    spec = automil.get_learner(args.child)
    warm = make_bags(WARMUP_BAGS, args.instances, args.features, args.seed + 1)
    Standardized(spec.build()).fit(warm)
    del warm
    gc.collect()
    try:  # hand freed heap back to the system, so the fit's peak is not served from the warm-up's leftovers
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
    model = Standardized(spec.build())
    Path("/proc/self/clear_refs").write_text("5")
    before = status_bytes("self", "VmRSS")
    print(json.dumps({"event": "start", "before": before, "instance_bytes": instance_bytes(bags)}), flush=True)
    start = time.perf_counter()
    model.fit(bags)
    seconds = time.perf_counter() - start
    print(json.dumps({"event": "done", "peak": status_bytes("self", "VmHWM"), "seconds": seconds}), flush=True)


def measure(name: str, n_bags: int, args) -> dict:
    """Run one (learner, size) in a fresh process and watch its peak; the row of that measurement."""
    command = [sys.executable, __file__, "--child", name, "--child-bags", str(n_bags), "--instances",
               str(args.instances), "--features", str(args.features), "--seed", str(args.seed)]
    row = {"learner": name, "bags": n_bags, "instances": n_bags * args.instances, "stopped": None}
    errors = tempfile.TemporaryFile("w+")  # a file, not a pipe: a learner's chatter never blocks its fit
    with errors, subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True) as proc:
        start_line = proc.stdout.readline()  # warm-up: no time limit beyond the generous one below
        if not start_line:
            proc.wait()
            row["error"] = _last_line(errors, proc)
            return row
        started = json.loads(start_line)
        row["instance_bytes"], before = started["instance_bytes"], started["before"]
        deadline, peak = time.monotonic() + args.limit, before
        while proc.poll() is None:
            try:
                peak, rss = status_bytes(proc.pid, "VmHWM"), status_bytes(proc.pid, "VmRSS")
            except (OSError, KeyError):
                break
            if rss > args.cap or time.monotonic() > deadline:
                row["stopped"] = "cap" if rss > args.cap else "limit"
                proc.kill()
                break
            time.sleep(0.05)
        proc.wait()
        if row["stopped"] is None:
            done = proc.stdout.readline()
            if not done:
                row["error"] = _last_line(errors, proc)
                row["peak"] = peak
            else:
                done = json.loads(done)
                peak, row["seconds"] = done["peak"], done["seconds"]
    row["working"] = peak - before
    row["factor"] = row["working"] / row["instance_bytes"] - 1
    return row


def _last_line(errors, proc) -> str:
    errors.seek(0)
    lines = errors.read().strip().splitlines()
    return lines[-1] if lines else f"exit {proc.returncode}"


def table(rows: list[dict], sizes: list[int]) -> str:
    """One markdown line per learner: instance MB, working MB and factor at each size, and the growth."""
    by = {(r["learner"], r["bags"]): r for r in rows}
    names = sorted({r["learner"] for r in rows}, key=str.lower)
    small, large = sizes[0], sizes[-1]
    head = ["learner", *(f"instances MB ({n} bags)" for n in sizes), *(f"working MB ({n})" for n in sizes),
            *(f"factor ({n})" for n in sizes), "faster than linear"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name in names:
        cells = [name]
        got = [by.get((name, n)) for n in sizes]
        cells += [f"{r['instance_bytes'] / 1e6:.1f}" if r and "instance_bytes" in r else "-" for r in got]
        cells += [_cell(r, "working") for r in got]
        cells += [_cell(r, "factor") for r in got]
        a, b = by.get((name, small)), by.get((name, large))
        if a and b and "error" not in a and "error" not in b:
            # a working set in proportion to the instances keeps its factor; a fixed one's falls
            faster = b["working"] > GROWTH_TOLERANCE * (large / small) * max(a["working"], 1)
            cells.append(("yes" if faster else "no") + (" (at least)" if b["stopped"] else ""))
        else:
            cells.append("-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(row, key):
    if not row or key not in row or "error" in row:  # a fit that raised measured nothing of its own
        return "error" if row else "-"
    value = row[key] / 1e6 if key == "working" else row[key]
    text = f"{value:.0f}" if key == "working" else f"{value:.2f}"
    return (">= " + text + f" ({row['stopped']})") if row["stopped"] else text


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learner", nargs="+", help="learners to measure (default: every registered learner)")
    parser.add_argument("--bags", nargs="+", type=int, default=[500, 2000])
    parser.add_argument("--instances", type=int, default=100, help="instances per bag")
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--limit", type=float, default=240.0, help="seconds a fit may run before it is stopped")
    parser.add_argument("--cap", type=float, default=6e9, help="resident bytes at which a fit is stopped")
    parser.add_argument("--jobs", type=int, default=1, help="measurements at once")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("/work/bench-out/memory"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-bags", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args)

    import automil

    names = args.learner or sorted(automil.learners(), key=str.lower)
    sizes = sorted(args.bags)
    cases = [(name, n) for n in sizes for name in names]  # every learner at the small size first
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    rows = []
    with ThreadPoolExecutor(args.jobs) as pool, (args.out / f"memory-factors-{stamp}.jsonl").open("w") as log:
        for done in as_completed([pool.submit(measure, *case, args) for case in cases]):
            row = done.result()
            rows.append(row)
            log.write(json.dumps(row) + "\n")  # each row as it comes, so a stopped run keeps what it measured
            log.flush()
            stopped = f" stopped at the {row['stopped']}" if row["stopped"] else ""
            print(f"{row['learner']} {row['bags']} bags: factor {row.get('factor', float('nan')):.2f}{stopped}"
                  f"{' ' + str(row['error']) if 'error' in row else ''}", file=sys.stderr, flush=True)
    print(table(rows, sizes))
    path = args.out / f"memory-factors-{stamp}.json"
    facts = {"bags": sizes, "instances_per_bag": args.instances, "features": args.features, "dtype": "float32",
             "seed": args.seed, "limit_s": args.limit, "cap_bytes": args.cap, "cpus": os.cpu_count(),
             "command": " ".join(["python", "experiments/memory_factors.py", *(argv or sys.argv[1:])]), "rows": rows}
    path.write_text(json.dumps(facts, indent=1))
    print(f"\nwritten to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
