"""Slide feature folders laid out as CLAM and TRIDENT write them, generated with the evidence in a known place.

A slide is a grid of patches (``coords`` in level-0 pixels, as the extractors store them); every slide of a
tumour case has a disc of witness patches, all in the same region of the grid, whose features are shifted
along one direction. Each case adds its own offset to every patch of its slides, so a split that puts one
case's slides on both sides leaks it. With ``patches`` or ``witness_share``, a slide holds a drawn number of
patches and its witnesses are that share of them, the patches nearest the region's centre. Run ``python -m
automil_datasets.slides OUT --layout clam`` (or ``trident``); the labels table is written as
``OUT/slides.csv`` with the columns ``case_id,slide_id,label``.
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["SlideSet", "write_slide_set", "in_witness_region", "LABELS_FILE", "CLASSES", "TRIDENT_ENCODER"]

LABELS_FILE = "slides.csv"
CLASSES = ("normal_tissue", "tumor_tissue")
TRIDENT_ENCODER = "uni_v1"
PATCH = 256  # patch side in pixels: coords step by this much
GRID = 16  # a slide is at most GRID x GRID patches
TISSUE_FRACTION = 0.6  # share of the grid's patches that hold tissue
# The witness region: a disc of radius WITNESS_RADIUS patches around WITNESS_CENTRE (column, row).
WITNESS_CENTRE = (4.0, 4.0)
WITNESS_RADIUS = 2.6
WITNESS_SHIFT = 3.5  # how far a witness patch moves along the tumour direction (noise has unit variance)
CASE_SPREAD = 0.7  # the standard deviation of a case's own offset
# With ``patches`` or ``witness_share`` given: the defaults of the other one.
SIZED_PATCHES = (60, 180)  # patches per slide, uniform in this range (at most GRID x GRID)
SIZED_WITNESS_SHARE = 0.1  # witness patches' share of a tumour slide (at least one)


@dataclass(frozen=True)
class SlideSet:
    """What :func:`write_slide_set` wrote: the folder to give ``--dataset``, the labels table, the slides,
    and the unit direction along which the witness patches are shifted."""

    features: Path
    labels: Path
    slides: tuple[str, ...]
    direction: np.ndarray | None = field(default=None, compare=False, repr=False)


def write_slide_set(root, layout: str = "clam", n_cases: int = 24, n_features: int = 32, seed: int = 0,
                    pt: bool = True, witness_radius: float = WITNESS_RADIUS, patches: tuple[int, int] | None = None,
                    witness_share: float | None = None) -> SlideSet:
    """Write ``n_cases`` cases of 2 or 3 slides each under ``root`` in ``layout`` (``clam`` or ``trident``).

    Half the cases (rounded down) are ``tumor_tissue``. CLAM: ``root/h5_files/<slide>.h5`` and, with ``pt``
    and torch installed, ``root/pt_files/<slide>.pt``; TRIDENT: ``root/20x_256px_0px_overlap/
    features_uni_v1/<slide>.h5``. Every ``.h5`` holds ``features`` (float32, patches x ``n_features``) and
    ``coords`` (int64, patches x 2, the top-left pixel of each patch). ``witness_radius`` (in patches)
    sets the witness share: about 21 of a slide's ~160 patches at the default 2.6, 5 (3 %) at 1.

    With ``patches`` ``(low, high)`` or ``witness_share`` (the other then takes ``SIZED_PATCHES`` or
    ``SIZED_WITNESS_SHARE``), every slide holds a number of patches drawn uniformly from ``low`` to ``high``
    on random cells of the grid, and ``max(1, round(witness_share * patches))`` of them, the cells nearest
    the witness region's centre, are shifted on a tumour slide (``witness_radius`` is then unused).
    """
    import h5py

    sized = patches is not None or witness_share is not None
    if sized:
        patches = tuple(SIZED_PATCHES if patches is None else patches)
        witness_share = SIZED_WITNESS_SHARE if witness_share is None else witness_share
        if not 1 <= patches[0] <= patches[1] <= GRID * GRID:
            raise ValueError(f"patches must be (low, high) with 1 <= low <= high <= {GRID * GRID}, got {patches}")
        if not 0 < witness_share <= 1:
            raise ValueError(f"witness_share must be in (0, 1], got {witness_share}")

    if layout not in ("clam", "trident"):
        raise ValueError(f"layout must be 'clam' or 'trident', got {layout!r}")
    root = Path(root)
    rng = np.random.default_rng(seed)
    direction = rng.standard_normal(n_features)
    direction /= np.linalg.norm(direction)
    if layout == "clam":
        h5_dir = root / "h5_files"
        pt_dir = root / "pt_files" if pt and _has_torch() else None
    else:
        h5_dir, pt_dir = root / "20x_256px_0px_overlap" / f"features_{TRIDENT_ENCODER}", None
    for folder in (h5_dir, pt_dir):
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
    labels = rng.permutation(np.arange(n_cases) < n_cases // 2)
    rows = []
    for case, tumour in enumerate(labels):
        case_id = f"case-{case:03d}"
        offset = CASE_SPREAD * rng.standard_normal(n_features)
        for s in range(int(rng.integers(2, 4))):
            slide_id = f"{case_id}-slide-{s}"
            if sized:
                features, coords = _sized_slide(rng, direction, offset, bool(tumour), patches, witness_share)
            else:
                features, coords = _slide(rng, direction, offset, bool(tumour), witness_radius)
            with h5py.File(h5_dir / f"{slide_id}.h5", "w") as f:
                f.create_dataset("features", data=features)
                f.create_dataset("coords", data=coords)
            if pt_dir is not None:
                import torch

                torch.save(torch.from_numpy(features), pt_dir / f"{slide_id}.pt")
            rows.append((case_id, slide_id, CLASSES[int(tumour)]))
    labels_path = root / LABELS_FILE
    with open(labels_path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(("case_id", "slide_id", "label"))
        writer.writerows(rows)
    return SlideSet(root if layout == "clam" else h5_dir.parent.parent, labels_path, tuple(r[1] for r in rows),
                    direction)


def in_witness_region(coords, radius: float = WITNESS_RADIUS) -> np.ndarray:
    """Whether each patch (``coords`` in pixels) lies in the witness disc of ``radius`` patches."""
    cells = np.asarray(coords) / PATCH
    return np.hypot(cells[:, 0] - WITNESS_CENTRE[0], cells[:, 1] - WITNESS_CENTRE[1]) <= radius


def _slide(rng, direction, offset, tumour: bool, radius: float = WITNESS_RADIUS) -> tuple[np.ndarray, np.ndarray]:
    """One slide's patch features and coords: tissue on a random part of the grid, witnesses in the disc."""
    cells = np.argwhere(np.ones((GRID, GRID), dtype=bool))[:, ::-1]  # (column, row)
    keep = rng.random(len(cells)) < TISSUE_FRACTION
    keep |= np.hypot(cells[:, 0] - WITNESS_CENTRE[0], cells[:, 1] - WITNESS_CENTRE[1]) <= radius
    coords = (cells[keep] * PATCH).astype(np.int64)
    features = rng.standard_normal((len(coords), len(direction))) + offset
    if tumour:
        features[in_witness_region(coords, radius)] += WITNESS_SHIFT * direction
    return features.astype(np.float32), coords


def _sized_slide(rng, direction, offset, tumour: bool, patches: tuple[int, int], share: float, grid: int = GRID,
                 dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """One slide of a drawn number of patches on random cells of a ``grid`` x ``grid`` grid; its witnesses the
    cells nearest the centre (``WITNESS_CENTRE`` scaled from ``GRID`` to ``grid``). The noise is drawn in
    ``dtype`` (``float32`` halves a large slide's memory; the default keeps the slides ``write_slide_set``
    writes)."""
    cells = np.argwhere(np.ones((grid, grid), dtype=bool))[:, ::-1]  # (column, row)
    centre = [c * grid / GRID for c in WITNESS_CENTRE]
    n = int(rng.integers(patches[0], patches[1] + 1))
    k = witness_count(n, share)
    nearest = np.argsort(np.hypot(cells[:, 0] - centre[0], cells[:, 1] - centre[1]), kind="stable")
    chosen = np.sort(np.concatenate((nearest[:k], rng.choice(nearest[k:], n - k, replace=False))))
    coords = (cells[chosen] * PATCH).astype(np.int64)
    features = rng.standard_normal((n, len(direction)), dtype=dtype)
    features += offset
    if tumour:
        features[np.isin(chosen, nearest[:k])] += WITNESS_SHIFT * direction
    return features.astype(np.float32, copy=False), coords


def witness_count(patches: int, share: float) -> int:
    """How many of a tumour slide's ``patches`` are witnesses at ``share``: at least one, at most all."""
    return min(patches, max(1, round(share * patches)))


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m automil_datasets.slides", description=__doc__.split("\n")[0])
    parser.add_argument("out", help="the folder to write")
    parser.add_argument("--layout", choices=("clam", "trident"), default="clam")
    parser.add_argument("--cases", type=int, default=24)
    parser.add_argument("--features", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--witness-radius", type=float, default=WITNESS_RADIUS,
                        help=f"radius of the witness disc in patches (default {WITNESS_RADIUS})")
    args = parser.parse_args(argv)
    written = write_slide_set(args.out, args.layout, args.cases, args.features, args.seed,
                              witness_radius=args.witness_radius)
    print(f"{len(written.slides)} slides in {written.features}; labels in {written.labels}")


if __name__ == "__main__":
    main()
