"""Accuracy against cost on one dataset: does a learner's Pareto front (``--objective balanced_accuracy
--objective fit_seconds``) hold a point much faster than its most accurate point and nearly as accurate?

    python experiments/pareto.py --dataset fox --budget 900 --rescore-limit 30
    python experiments/pareto.py --dataset fox --budget 1200 --allocation equal --rescore-limit 30

It runs ``automil tune --dataset D --objective balanced_accuracy --objective fit_seconds --protocol tuned
--timeout B`` untracked in a fresh storage (every learner; the tuned protocol because the fronts come from
the main study, so the outer splits would only take budget), then for every learner and for the union of
all learners' fronts it takes the most accurate point A (ties: the faster) and the fastest point F of the
front within ``--tolerance`` (2 points) of A's BACC, and prints the speed-up fit(A) / fit(F) and the BACC
given up. The front's figures come from the folds the tuner saw, so A and F are scored again on fresh
folds (another seed) in this process, with their fit times measured again on the same machine: the
``fresh`` columns are the honest ones. The target (issue 13): a speed-up of at least ``--speedup`` (5x)
within 2 points, per learner and across learners.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from automil.evaluation.pareto import cheapest_near_best, non_dominated

OBJECTIVES = ["--objective", "balanced_accuracy", "--objective", "fit_seconds"]


def tune(dataset: str, budget: float, storage: Path, seed: int, learners: list[str], allocation: str) -> list[dict]:
    command = [sys.executable, "-m", "automil.cli", "tune", "--dataset", dataset, *OBJECTIVES, "--protocol", "tuned",
               "--timeout", f"{budget:.0f}", "--n-trials", "none", "--repeats", "1", "--storage", f"journal:{storage}",
               "--no-track", "--seed", str(seed), "--allocation", allocation, "--json", "-"]
    for learner in learners:
        command += ["--learner", learner]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def pair(points: list[dict], tolerance: float) -> tuple[dict, dict]:
    """The most accurate point of the front of ``points`` (ties: faster) and its fastest point within
    ``tolerance`` of it."""
    values = np.array([[p["balanced_accuracy"], p["fit_seconds"]] for p in points])
    front = [points[i] for i in non_dominated(values, [True, False])]
    best = max(front, key=lambda p: (p["balanced_accuracy"], -p["fit_seconds"]))
    fast = front[cheapest_near_best([p["balanced_accuracy"] for p in front], [p["fit_seconds"] for p in front],
                                    tolerance)]
    return best, fast


def rescore(bags, point: dict, seed: int, folds: int) -> dict:
    """BACC and mean fit seconds of ``point`` on fresh folds (another seed than the tuning folds)."""
    from automil.evaluation.folds import bag_folds, fold_splits
    from automil.evaluation.metrics import fold_scores
    from automil.tune.workers.fits import fit_predict

    scores, seconds = [], []
    for train, test in fold_splits(bag_folds(bags.y, folds, seed)):
        out = fit_predict(bags, point["learner"], point["params"], train, test, seed)
        scores.append(fold_scores(bags.y[test], out.y_pred).balanced_accuracy)
        seconds.append(out.fit_seconds)
    return {"balanced_accuracy": float(np.mean(scores)), "fit_seconds": float(np.mean(seconds))}


def compare(name: str, points: list[dict], bags, args, cache: dict) -> dict:
    best, fast = pair(points, args.tolerance)
    out = {"name": name, "front": len(points), "best": best, "fast": fast,
           "speedup": best["fit_seconds"] / fast["fit_seconds"],
           "given_up": best["balanced_accuracy"] - fast["balanced_accuracy"]}
    fresh = []
    for point in (best, fast):
        key = (point["learner"], point["trial"])
        if key not in cache and point["fit_seconds"] * args.folds <= args.rescore_limit:
            cache[key] = rescore(bags, point, args.seed + 1, args.folds)
        fresh.append(cache.get(key))
    if all(fresh):
        out["fresh_speedup"] = fresh[0]["fit_seconds"] / fresh[1]["fit_seconds"]
        out["fresh_given_up"] = fresh[0]["balanced_accuracy"] - fresh[1]["balanced_accuracy"]
        out["fresh_best_bacc"], out["fresh_fast_bacc"] = fresh[0]["balanced_accuracy"], fresh[1]["balanced_accuracy"]
    ok = out["speedup"] >= args.speedup and out["given_up"] <= args.tolerance
    out["meets_target"] = bool(ok)
    return out


def line(out: dict) -> str:
    best, fast = out["best"], out["fast"]
    fresh = (f"{out['fresh_speedup']:6.1f}x {100 * out['fresh_given_up']:+6.1f}" if "fresh_speedup" in out
             else f"{'-':>7} {'-':>6}")
    return (f"{out['name']:<18} {out['front']:>5} {best['learner']:>16}#{best['trial']:<3} "
            f"{100 * best['balanced_accuracy']:5.1f} {best['fit_seconds']:8.3f}  "
            f"{fast['learner']:>16}#{fast['trial']:<3} "
            f"{100 * fast['balanced_accuracy']:5.1f} {fast['fit_seconds']:8.3f}  {out['speedup']:6.1f}x "
            f"{100 * out['given_up']:+5.1f}  {fresh}  {'yes' if out['meets_target'] else 'no'}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="fox")
    parser.add_argument("--budget", type=float, default=600.0, help="--timeout of the tune, seconds")
    parser.add_argument("--learner", action="append", default=[], help="repeatable; default every learner")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--allocation", default="promise", choices=("promise", "equal"),
                        help="of automil tune: equal gives every learner the same seconds, so more of them get a "
                             "front of several points")
    parser.add_argument("--folds", type=int, default=6, help="folds of the fresh re-scoring")
    parser.add_argument("--tolerance", type=float, default=0.02, help="BACC given up at most (0.02: 2 points)")
    parser.add_argument("--speedup", type=float, default=5.0)
    parser.add_argument("--rescore-limit", type=float, default=120.0,
                        help="skip re-scoring a point whose fits would take longer (seconds, all folds)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)

    from automil.data.datasets import load_bags

    start = time.time()
    with tempfile.TemporaryDirectory(prefix="automil-pareto-") as tmp:
        rows = tune(args.dataset, args.budget, Path(tmp) / "studies.journal", args.seed, args.learner,
                    args.allocation)
    tuned = time.time() - start
    bags = load_bags(args.dataset)
    fronts = {r["learner"]: [{"learner": r["learner"], "trial": p["trial"], "params": p["params"], **p["values"]}
                             for p in r["pareto_front"]]
              for r in rows if r.get("pareto_front")}
    print(f"{args.dataset}: tuned {len(fronts)} learners for BACC against fit seconds in {tuned:.0f} s "
          f"(--timeout {args.budget:.0f}, --allocation {args.allocation}); target: a front point >= "
          f"{args.speedup:g}x faster than the most accurate, "
          f"within {100 * args.tolerance:g} points of its BACC (tuning folds; fresh: re-scored on {args.folds} "
          f"fresh folds)")
    print(f"{'learner':<18} {'front':>5} {'most accurate (trial)':>20} {'BACC':>5} {'fit s':>8}  "
          f"{'fastest within tol.':>20} {'BACC':>5} {'fit s':>8}  {'speed':>7} {'ΔBACC':>5}  "
          f"{'fresh':>7} {'ΔBACC':>6}  target")
    for row in rows:
        if not row.get("pareto_front"):
            print(f"{row['learner']:<18} no front: {row.get('status')} {row.get('error') or ''}"[:160])
    cache, results = {}, []
    for learner, points in sorted(fronts.items()):
        results.append(compare(learner, points, bags, args, cache))
        print(line(results[-1]), flush=True)
    union = [p for points in fronts.values() for p in points]
    if union:
        results.append(compare("ALL LEARNERS", union, bags, args, cache))
        print(line(results[-1]), flush=True)
    met = [r["name"] for r in results[:-1] if r["meets_target"]]
    print(f"per learner: {len(met)} of {len(results) - 1} fronts meet the target ({', '.join(met) or 'none'}); "
          f"across learners: {'yes' if results and results[-1]['meets_target'] else 'no'}; "
          f"wall {time.time() - start:.0f} s (machine shared with other work)")
    if args.json:
        Path(args.json).write_text(json.dumps({"dataset": args.dataset, "budget": args.budget, "rows": rows,
                                               "results": results}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
