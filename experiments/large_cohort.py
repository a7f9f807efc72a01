"""A generated slide cohort larger than memory, written as a TRIDENT feature folder one slide at a time, with
the max-pooling oracle computed as it is written.

The recipe of ``automil_datasets.slides`` (``write_slide_set``'s sized slides, drawn by its ``_sized_slide``)
and of ``experiments/cohorts.py``: cases (patients) of 2 or 3 slides, half of them tumour (string labels
``normal_tissue`` / ``tumor_tissue``), every patch of a case carrying the case's own offset (``CASE_SPREAD``
times a standard normal), patches standard normal float32 of ``--features`` features, and on a tumour slide
``--witness-share`` of its patches (at least one) shifted by ``WITNESS_SHIFT`` along one unit direction.
Here the patches lie on random cells of a square grid large enough for them (side ``ceil(sqrt(patches /
TISSUE_FRACTION))``), the witnesses on the cells nearest the witness centre, coords the cell times 256
pixels. The case sizes are drawn first, so the cohort holds exactly ``--slides`` slides.

    python experiments/large_cohort.py [--slides 1000] [--patches 10000 | --patches LOW HIGH] [--features 768]
                                       [--witness-share 0.03] [--seed 0] [--out DIR]
    python experiments/large_cohort.py --out DIR --oracle-on RUN_FOLDS_JSON [--outer 0]

writes ``DIR/20x_256px_0px_overlap/features_uni_v1/<slide>.h5`` (``features`` float32 patches x features,
``coords`` int64 patches x 2, contiguous and uncompressed), the labels table ``DIR/slides.csv``
(``case_id,slide_id,label``) and the facts JSON ``DIR.json`` beside the folder, as ``experiments/cohorts.py``
does (so ``experiments/scale.py compare DIR`` finds the labels and the oracle). Only one slide is held in
memory at a time: the oracle (each slide's largest patch projection on the direction) is taken from the
array just generated, never read back. Equal arguments give equal files.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time
from pathlib import Path

import cohorts  # experiments/ is on sys.path when this script runs
import numpy as np

from automil_datasets.slides import (
    CASE_SPREAD,
    CLASSES,
    LABELS_FILE,
    TISSUE_FRACTION,
    TRIDENT_ENCODER,
    WITNESS_SHIFT,
    _sized_slide,
)

TRIDENT_MAG = "20x_256px_0px_overlap"  # TRIDENT's folder of 256-pixel patches at 20x, no overlap
PROGRESS_EVERY = 50  # slides between progress lines


def case_sizes(rng, slides: int) -> list[int]:
    """Cases of 2 or 3 slides (each drawn as ``write_slide_set`` draws it) that add up to exactly ``slides``:
    with 4 slides left the case takes 2, with 2 or 3 left it takes them all."""
    sizes, left = [], slides
    while left:
        size = left if left <= 3 else 2 if left == 4 else int(rng.integers(2, 4))
        sizes.append(size)
        left -= size
    return sizes


def max_projection(features: np.ndarray, direction: np.ndarray) -> float:
    """The slide's largest patch projection on ``direction``, in float64 a block of rows at a time."""
    step = cohorts.ORACLE_BLOCK_ROWS
    return max(float((np.asarray(features[start:start + step], dtype=np.float64) @ direction).max())
               for start in range(0, len(features), step))


def write_large_cohort(out: Path, slides: int, patches: tuple[int, int], n_features: int, witness_share: float,
                       seed: int) -> dict:
    """Write the cohort under ``out`` slide by slide and its facts JSON beside it; the facts."""
    import h5py

    out = Path(out)
    grid = math.ceil(math.sqrt(patches[1] / TISSUE_FRACTION))
    h5_dir = out / TRIDENT_MAG / f"features_{TRIDENT_ENCODER}"
    h5_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    direction = rng.standard_normal(n_features)
    direction /= np.linalg.norm(direction)
    sizes = case_sizes(rng, slides)
    n_cases = len(sizes)
    labels = rng.permutation(np.arange(n_cases) < n_cases // 2)
    rows, scores, n_instances, written, start = [], [], 0, 0, time.perf_counter()
    for case, (size, tumour) in enumerate(zip(sizes, labels)):
        case_id = f"case-{case:04d}"
        offset = CASE_SPREAD * rng.standard_normal(n_features)
        for s in range(size):
            slide_id = f"{case_id}-slide-{s}"
            features, coords = _sized_slide(rng, direction, offset, bool(tumour), patches, witness_share, grid=grid,
                                            dtype=np.float32)
            scores.append(max_projection(features, direction))
            path = h5_dir / f"{slide_id}.h5"
            part = path.with_name(path.name + ".part")  # a slide cut short never reads as a slide
            with h5py.File(part, "w") as f:
                f.create_dataset("features", data=features)
                f.create_dataset("coords", data=coords)
            os.replace(part, path)
            written += path.stat().st_size
            n_instances += len(features)
            rows.append((case_id, slide_id, CLASSES[int(tumour)]))
            del features, coords
            if len(rows) % PROGRESS_EVERY == 0 or len(rows) == slides:
                elapsed = time.perf_counter() - start
                print(f"{len(rows):6d}/{slides} slides  {written / 1e9:8.2f} GB  {elapsed:8.1f} s  "
                      f"{written / 1e6 / max(elapsed, 1e-9):7.1f} MB/s", flush=True)
    labels_path = out / LABELS_FILE
    with open(labels_path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(("case_id", "slide_id", "label"))
        writer.writerows(rows)
    positive = np.array([label == CLASSES[1] for *_, label in rows])
    figures = cohorts.oracle_figures(np.array(scores), positive)
    facts = {"slides": slides, "witness_share": witness_share, "patches": list(patches), "n_features": n_features,
             "seed": seed, "layout": "trident", "grid": grid, "witness_shift": WITNESS_SHIFT,
             "case_spread": CASE_SPREAD, "n_cases": n_cases, "n_bags": len(rows), "n_instances": n_instances,
             "n_tumour": int(positive.sum()), "bytes": written,
             "features": f"{out.name}/{TRIDENT_MAG}/features_{TRIDENT_ENCODER}",
             "labels": f"{out.name}/{LABELS_FILE}", "groups": "case_id",
             **{f"oracle_{k}": v for k, v in figures.items()}, "direction": direction.tolist()}
    facts_path(out).write_text(json.dumps(facts, indent=2) + "\n")
    return facts


def facts_path(out: Path) -> Path:
    """The facts JSON beside the cohort's folder, where ``experiments/scale.py`` looks for it."""
    return out.parent / f"{out.name}.json"


def oracle_on_run(out: Path, folds_file: Path, outer: list[int]) -> dict:
    """The oracle on a run's outer folds (its ``folds.json``, as MLflow logs it; the hold-out protocol's outer
    fold is 0): each slide's largest patch projection read back one slide at a time."""
    import h5py

    from automil.evaluation.folds_file import read_fold_file

    facts = json.loads(facts_path(out).read_text())
    direction = np.asarray(facts["direction"], dtype=np.float64)
    folds = read_fold_file(folds_file)
    slides = [name for fold in folds.tuning for name in fold]
    assignment = np.array([fold for fold, names in enumerate(folds.tuning) for _ in names])
    label = {row["slide_id"]: row["label"] for row in csv.DictReader(open(out / LABELS_FILE))}
    h5_dir = out / TRIDENT_MAG / f"features_{TRIDENT_ENCODER}"
    scores = []
    for slide in slides:
        with h5py.File(h5_dir / f"{slide}.h5", "r") as f:
            scores.append(max_projection(f["features"], direction))
    positive = np.array([label[slide] == CLASSES[1] for slide in slides])
    return cohorts.oracle_on_split(np.array(scores), positive, assignment, outer)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--slides", type=int, default=1000, help="slides in the cohort (exactly; at least 4)")
    parser.add_argument("--patches", type=int, nargs="+", default=[10000], metavar="N",
                        help="patches a slide: N, or LOW HIGH drawn uniformly (default 10000)")
    parser.add_argument("--features", type=int, default=768, help="features a patch (default 768, UNI's)")
    parser.add_argument("--witness-share", type=float, default=0.03,
                        help="share of a tumour slide's patches that are witnesses, at least one (default 0.03)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="large-cohort", help="the folder to write (facts JSON beside it)")
    parser.add_argument("--oracle-on", metavar="FOLDS_JSON",
                        help="write nothing: print the oracle of the cohort at --out on the outer folds of a run's "
                             "folds.json (its MLflow artifact)")
    parser.add_argument("--outer", type=int, nargs="+", default=[0],
                        help="with --oracle-on: the outer folds (default 0, the hold-out protocol's)")
    args = parser.parse_args(argv)
    if args.oracle_on:
        figures = oracle_on_run(Path(args.out), Path(args.oracle_on), args.outer)
        print(f"oracle on outer fold(s) {args.outer}: ROC AUC {figures['roc_auc']:.4f}  "
              f"BACC {figures['balanced_accuracy']:.4f} (cut chosen on the other folds)")
        return
    if len(args.patches) not in (1, 2):
        parser.error("--patches takes N or LOW HIGH")
    patches = (args.patches[0], args.patches[-1])
    if not 1 <= patches[0] <= patches[1]:
        parser.error(f"--patches must be 1 <= LOW <= HIGH, got {args.patches}")
    if args.slides < 4:
        parser.error("--slides must be at least 4 (two cases, one of each label)")
    if not 0 < args.witness_share <= 1:
        parser.error(f"--witness-share must be in (0, 1], got {args.witness_share}")
    out = Path(args.out)
    print(f"writing {args.slides} slides of {patches[0]}-{patches[1]} patches x {args.features} features "
          f"(witness share {args.witness_share:g}, seed {args.seed}) to {out}", flush=True)
    start = time.perf_counter()
    facts = write_large_cohort(out, args.slides, patches, args.features, args.witness_share, args.seed)
    wall = time.perf_counter() - start
    print(f"{facts['n_bags']} slides ({facts['n_cases']} cases, {facts['n_tumour']} tumour), "
          f"{facts['n_instances']} patches, {facts['bytes'] / 1e9:.2f} GB ({facts['bytes']} bytes) in {wall:.1f} s")
    print(f"oracle ROC AUC {facts['oracle_roc_auc']:.4f}  BACC {facts['oracle_bacc']:.4f}")
    print(f"features {out / facts['features'].split('/', 1)[1]}\nlabels   {out / LABELS_FILE}\n"
          f"facts    {facts_path(out)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
