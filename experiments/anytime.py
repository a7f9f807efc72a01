"""Anytime behaviour of the budget: ``automil tune``'s promise allocation against an equal split of the same
budget between learners (``--allocation equal``), on the same data and seed.

    python experiments/anytime.py --dataset fox --budget 300
    python experiments/anytime.py --dataset digits-bags --dataset fox --dataset sival --budget 300 --json out.json
    python experiments/anytime.py --dataset fox --allocation promise    # one schedule only

For each fraction of the budget (25%, 50%, 100% by default) it runs ``automil tune --dataset D --timeout
f*B`` twice, in fresh storages and untracked: with ``--allocation promise`` (the default) and with
``--allocation equal`` (after the defaults, every learner with a score gets the same seconds). Both run
every learner's defaults first, so they differ only in where the rest of the time goes. It prints, for
each, the best nested BACC reached, the trials per learner (main study), the share of the trials held by
the three best learners, and the learners without a nested figure. Each fraction is a separate run (a
nested figure needs the final evaluation), so the script takes about 3.5 x the budget per dataset.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def tune(dataset: str, timeout: float, storage: Path, seed: int, allocation: str) -> list[dict]:
    command = [sys.executable, "-m", "automil.cli", "tune", "--dataset", dataset, "--timeout", f"{timeout:.0f}",
               "--storage", f"journal:{storage}", "--no-track", "--seed", str(seed), "--allocation", allocation,
               "--json", "-"]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def summary(rows: list[dict]) -> dict:
    rows = [r for r in rows if r.get("members") is None]  # learners only: the ensemble runs no trial
    scored = [r for r in rows if r.get("nested_balanced_accuracy") is not None]
    best = max(scored, key=lambda r: r["nested_balanced_accuracy"], default=None)
    trials = {r["learner"]: r.get("trials") or 0 for r in rows if r.get("status") != "skipped"}
    top3 = sorted(scored, key=lambda r: -r["nested_balanced_accuracy"])[:3]
    total = sum(trials.values())
    return {"best_learner": None if best is None else best["learner"],
            "best_nested_bacc": None if best is None else best["nested_balanced_accuracy"],
            "trials": trials, "top3_share": sum(trials[r["learner"]] for r in top3) / total if total else 0.0,
            "without_figure": sorted(r["learner"] for r in rows
                                     if r.get("status") != "skipped" and r.get("nested_balanced_accuracy") is None),
            "statuses": {r["learner"]: r.get("status") for r in rows},
            "nested_bacc": {r["learner"]: r.get("nested_balanced_accuracy") for r in rows},
            "fit_seconds": {r["learner"]: r.get("fit_seconds") for r in rows}}


def run(dataset: str, budget: float, fractions: list[float], seed: int, workdir: Path,
        allocations=("promise", "equal")) -> dict:
    out = {"dataset": dataset, "budget": budget, "promise": {}, "equal": {}}
    for fraction in fractions:
        for allocation in allocations:
            start = time.time()
            rows = tune(dataset, fraction * budget, workdir / f"{dataset}-{allocation}-{fraction}.journal", seed,
                        allocation)
            out[allocation][fraction] = {**summary(rows), "wall": time.time() - start}
            print(line(dataset, allocation, fraction, out[allocation][fraction]), flush=True)
    return out


def line(dataset: str, kind: str, fraction: float, s: dict) -> str:
    bacc = "-" if s["best_nested_bacc"] is None else f"{100 * s['best_nested_bacc']:.1f}"
    trials = " ".join(f"{k}={v}" for k, v in sorted(s["trials"].items(), key=lambda kv: -kv[1]))
    return (f"{dataset:12s} {kind:7s} {100 * fraction:4.0f}%  best nested BACC {bacc:>5s} ({s['best_learner']}); "
            f"top-3 share of trials {100 * s['top3_share']:.0f}%; without a figure: "
            f"{', '.join(s['without_figure']) or 'none'}; wall {s['wall']:.0f} s\n    trials: {trials}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", action="append", required=True)
    parser.add_argument("--budget", type=float, default=300.0, help="the full --timeout, seconds (default 300)")
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.25, 0.5, 1.0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write every figure to this file")
    parser.add_argument("--allocation", action="append", choices=["promise", "equal"],
                        help="run only this schedule (repeatable; default both)")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="automil-anytime-") as tmp:
        for dataset in args.dataset:
            results.append(run(dataset, args.budget, args.fractions, args.seed, Path(tmp),
                               args.allocation or ("promise", "equal")))
    for r in results:
        if max(args.fractions) not in r["equal"]:
            continue
        best_equal = r["equal"][max(args.fractions)]["best_nested_bacc"]
        half = r["promise"].get(0.5, {}).get("best_nested_bacc")
        if best_equal is not None and half is not None:
            print(f"{r['dataset']}: promise at 50% {100 * half:.1f} vs equal split at 100% {100 * best_equal:.1f} "
                  f"({'at least' if half >= best_equal else 'below'})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
