"""Ensemble selection against the best single learner: nested BACC of the ``ensemble`` row and of the best
learner's row of the same ``automil tune`` run (same data, seed and budget).

    python experiments/ensemble.py --dataset musk1 --dataset elephant --dataset fox --dataset tiger --budget 300
    python experiments/ensemble.py --dataset fox --budget none --n-trials 6 --repeats 3 --learner miles --learner nsk

For each dataset it runs ``automil tune --dataset D --timeout B`` once (``--n-trials``, ``--repeats`` and
``--learner`` passed on when given; ``--budget none --n-trials N`` gives every study the same trials whatever
the machine's load), in a fresh storage and untracked, and
prints the ensemble's nested BACC, its members and weights, the best single learner's nested BACC and the
difference in points. The best single learner is the maximum over the learners' nested figures, itself a
selection on the outer folds, so the comparison favours it slightly; the ensemble's members and weights
of outer split i are chosen on its inner folds only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from automil.records import PROCEDURE


def tune(dataset: str, storage: Path, args) -> list[dict]:
    command = [sys.executable, "-m", "automil.cli", "tune", "--dataset", dataset, "--timeout", args.budget,
               "--storage", f"journal:{storage}", "--no-track", "--seed", str(args.seed), "--json", "-"]
    for learner in args.learner or []:
        command += ["--learner", learner]
    for option in ("n_trials", "repeats"):
        if getattr(args, option) is not None:
            command += [f"--{option.replace('_', '-')}", str(getattr(args, option))]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def compare(dataset: str, rows: list[dict], wall: float) -> dict:
    ensemble = next((r for r in rows if r["learner"] == "ensemble"), None)
    singles = [r for r in rows if r["learner"] not in ("ensemble", PROCEDURE)
               and r.get("nested_balanced_accuracy") is not None]
    best = max(singles, key=lambda r: r["nested_balanced_accuracy"], default=None)
    chosen = next((r["learner"] for r in rows if r.get("selected")), None)
    return {"dataset": dataset, "wall": wall, "chosen": chosen, "learners_with_figure": len(singles),
            "ensemble": None if ensemble is None else ensemble.get("nested_balanced_accuracy"),
            "ensemble_std": None if ensemble is None else ensemble.get("nested_balanced_accuracy_std"),
            "members": None if ensemble is None else ensemble.get("members"),
            "best_learner": None if best is None else best["learner"],
            "best": None if best is None else best["nested_balanced_accuracy"],
            "best_std": None if best is None else best["nested_balanced_accuracy_std"]}


def line(c: dict) -> str:
    if c["ensemble"] is None or c["best"] is None:
        return f"{c['dataset']:10s} no comparison (ensemble {c['ensemble']}, best single {c['best']})"
    members = " ".join(f"{m['learner']}={m['weight']:.2f}" for m in c["members"])
    return (f"{c['dataset']:10s} ensemble {100 * c['ensemble']:.1f} +- {100 * c['ensemble_std']:.1f}  "
            f"best single {100 * c['best']:.1f} +- {100 * c['best_std']:.1f} ({c['best_learner']})  "
            f"difference {100 * (c['ensemble'] - c['best']):+.1f} points; chosen {c['chosen']}; "
            f"{c['learners_with_figure']} learners with a figure; wall {c['wall']:.0f} s\n    members: {members}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", action="append", required=True)
    parser.add_argument("--budget", default="300", help="--timeout of each run, seconds or none (default 300)")
    parser.add_argument("--n-trials", type=int)
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--learner", action="append", help="repeatable (default: every learner)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write every figure to this file")
    parser.add_argument("--storage-dir", help="keep each dataset's journal here (a second run on it reuses the "
                        "learners' results and selects the ensemble again; default: a temporary directory)")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="automil-ensemble-") as tmp:
        for dataset in args.dataset:
            storage = Path(args.storage_dir or tmp) / f"{dataset}.journal"
            start = time.time()
            rows = tune(dataset, storage, args)
            results.append(compare(dataset, rows, time.time() - start))
            print(line(results[-1]), flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=2))
    done = [c for c in results if c["ensemble"] is not None and c["best"] is not None]
    above = sum(c["ensemble"] > c["best"] for c in done)
    worst = min((c["ensemble"] - c["best"] for c in done), default=None)
    if done:
        print(f"ensemble above the best single learner on {above} of {len(done)}; largest shortfall "
              f"{100 * max(0.0, -worst):.1f} points (target: at most 1, and above on at least 2)")


if __name__ == "__main__":
    main()
