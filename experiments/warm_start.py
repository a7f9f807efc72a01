"""Warm start across datasets against a cold start: the best tuning BACC after 5 trials.

    python experiments/warm_start.py --learner bag-stats --learner miles --learner nsk --learner mivlad

Each of elephant, fox and tiger takes the target's place once, the other two being the sources (the
three orders of issue 13's target, "tiger after elephant and fox"). First every set is tuned alone
(``--source-trials`` trials per learner, ``--protocol tuned``, in a storage of its own). Then for each
target: a fresh storage gets copies of the two sources' main studies and the target is tuned there for 5
trials (defaults, then the warm-start point of the nearest source, then the sampler), and, cold, in an
empty storage with ``--no-warm-start`` (defaults, then the sampler). The figure is what the target asks:
the tuning score of the target's main study after its 5 trials (the best mean BACC over its 6 folds; the
same folds and seed in both arms, so they differ only in the points tried). It prints one line per learner
and target, then the mean over the three targets per learner and over all.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATASETS = ("elephant", "fox", "tiger")
TARGET_TRIALS = 5


def tune(dataset: str, learners: list[str], storage: Path, n_trials: int, seed: int, warm: bool) -> dict:
    """``automil tune`` on ``dataset``: the leaderboard rows by learner."""
    command = [sys.executable, "-m", "automil.cli", "tune", "--dataset", dataset,
               *[a for learner in learners for a in ("--learner", learner)], "--n-trials", str(n_trials),
               "--timeout", "none", "--protocol", "tuned", "--repeats", "1", "--jobs", "1", "--no-track",
               "--seed", str(seed), "--storage", f"journal:{storage}", "--json", "-"]
    done = subprocess.run(command + ([] if warm else ["--no-warm-start"]), capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
    return {row["learner"]: row for row in json.loads(done.stdout)}


def copy_sources(sources: list[Path], datasets: list[str], learners: list[str], to: Path):
    """The main studies of ``learners`` on ``datasets`` (one storage each) copied into the storage ``to``."""
    import optuna

    from automil.tune.backend.optuna_storage import open_storage

    target = open_storage(f"journal:{to}")
    for storage, dataset in zip(sources, datasets):
        for learner in learners:
            optuna.copy_study(from_study_name=f"{dataset}/{learner}", from_storage=open_storage(f"journal:{storage}"),
                              to_storage=target)


def warm_start_of(storage: Path, dataset: str, learner: str) -> dict:
    import optuna

    from automil.tune.backend.optuna_storage import open_storage

    study = optuna.load_study(study_name=f"{dataset}/{learner}", storage=open_storage(f"journal:{storage}"))
    trials = sorted(study.trials, key=lambda t: t.number)
    point = next((t for t in trials if "warm_start_from" in t.user_attrs), None)
    return {**study.user_attrs.get("warm_start", {}), "value": None if point is None else point.value}


def run(learners: list[str], source_trials: int, seed: int, workdir: Path) -> list[dict]:
    sources = {}
    for dataset in DATASETS:
        start = time.time()
        sources[dataset] = workdir / f"source-{dataset}.journal"
        rows = tune(dataset, learners, sources[dataset], source_trials, seed, warm=False)
        print(f"source {dataset}: {source_trials} trials per learner in {time.time() - start:.0f} s; best "
              + ", ".join(f"{name} {100 * (row.get('tuning_score') or 0):.1f}" for name, row in rows.items()),
              flush=True)
    out = []
    for target in DATASETS:
        others = [d for d in DATASETS if d != target]
        warm_storage = workdir / f"warm-{target}.journal"
        copy_sources([sources[d] for d in others], others, learners, warm_storage)
        warm = tune(target, learners, warm_storage, TARGET_TRIALS, seed, warm=True)
        cold = tune(target, learners, workdir / f"cold-{target}.journal", TARGET_TRIALS, seed, warm=False)
        for learner in learners:
            point = warm_start_of(warm_storage, target, learner)
            result = {"learner": learner, "target": target, "sources": others, "seed": seed,
                      "cold": cold[learner].get("tuning_score"), "warm": warm[learner].get("tuning_score"),
                      "source": point.get("source"), "skipped": point.get("skipped"),
                      "warm_point_value": point["value"]}
            out.append(result)
            print(line(result), flush=True)
    return out


def line(r: dict) -> str:
    what = (f"from {r['source']}" if r["source"] and not r["skipped"] else
            f"skipped ({r['skipped']})" if r["skipped"] else "no source")
    point = "" if r["warm_point_value"] is None else f", the warm point alone {100 * r['warm_point_value']:.1f}"
    return (f"{r['learner']:<16} {r['target']:<9} cold {_pct(r['cold'])}  warm {_pct(r['warm'])}  "
            f"({what}{point})")


def _pct(value) -> str:
    return "  -  " if value is None else f"{100 * value:5.1f}"


def summary(results: list[dict]) -> list[str]:
    lines = []
    learners = list(dict.fromkeys(r["learner"] for r in results))
    for learner in [*learners, None]:
        rows = [r for r in results if learner is None or r["learner"] == learner]
        pairs = [(r["cold"], r["warm"]) for r in rows if r["cold"] is not None and r["warm"] is not None]
        if not pairs:
            continue
        cold = sum(c for c, _ in pairs) / len(pairs)
        warm = sum(w for _, w in pairs) / len(pairs)
        wins = sum(w > c for c, w in pairs)
        ties = sum(w == c for c, w in pairs)
        lines.append(f"{learner or 'all':<16} mean over {len(pairs)}: cold {100 * cold:.1f}, warm {100 * warm:.1f} "
                     f"(warm - cold {100 * (warm - cold):+.1f}; warm better {wins}, equal {ties}, worse "
                     f"{len(pairs) - wins - ties})")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learner", action="append", required=True)
    parser.add_argument("--source-trials", type=int, default=15)
    parser.add_argument("--seed", type=int, action="append")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    results = []
    for seed in args.seed or [0]:
        with tempfile.TemporaryDirectory(prefix="automil-warm-") as scratch:
            results += run(args.learner, args.source_trials, seed, Path(scratch))
        print(f"\nseeds so far: {sorted({r['seed'] for r in results})}")
        print("\n".join(summary(results)) + "\n", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
