"""Slide cohorts labelled by a patient's outcome, a survival time or a continuous target, each a known function
of the share of the patient's patches that are witnesses, with the oracle's figure: what the true function
scores on the same patients, the ceiling a learner is measured against.

The slides are :mod:`automil_datasets.slides`' sized slides in TRIDENT's layout: patients (cases) of 1 to 3
slides, every patch of a patient carrying the patient's own offset, and every patient its own witness share,
drawn uniformly from 0 to ``max_share``: that share of each of its slides' patches (at least one), the cells
nearest the witness centre, shifted along one unit direction. The labels table holds a row per slide with the
patient's outcome on each, so ``--bag-by case_id`` pools a patient's slides into one bag. The share a patient
really has (its witnesses over its patches) drives the outcome:

- survival (``case_id,slide_id,time,event``): proportional hazards with log-hazard ``log_hazard_ratio * share /
  max_share`` over a Weibull baseline of ``shape`` (1: exponential) and scale ``BASELINE_SCALE``; an independent
  exponential censoring time whose scale is set so that ``censored`` of the patients are censored. Oracle:
  Harrell's C of the true log-hazard.
- regression (``case_id,slide_id,target``): the share in percent plus Gaussian noise of ``noise`` points.
  Oracle: R^2 of the share in percent, without the noise.

Equal arguments give equal files; the two tasks at one seed share their slides. Run ``python -m
automil_datasets.outcomes OUT --task survival`` (or ``regression``).
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from automil_datasets.slides import CASE_SPREAD, SIZED_PATCHES, TRIDENT_ENCODER, _sized_slide, witness_count

__all__ = ["OutcomeCohort", "write_survival_cohort", "write_regression_cohort", "TASKS", "OUTCOME_LABELS_FILE"]

TASKS = ("survival", "regression")
OUTCOME_LABELS_FILE = "labels.csv"
TRIDENT_MAG = "20x_256px_0px_overlap"  # TRIDENT's folder of 256-pixel patches at 20x, no overlap
SLIDES_PER_PATIENT = (1, 3)  # drawn uniformly, both ends included
MAX_SHARE = 0.3  # the largest witness share a patient is drawn with
BASELINE_SCALE = 5.0  # the Weibull baseline's scale: a patient at share 0 survives past it with probability 1/e
TIME_DECIMALS = 3  # times are written (and scored) rounded to this; never below 10 ** -TIME_DECIMALS
TARGET_DECIMALS = 4


@dataclass(frozen=True)
class OutcomeCohort:
    """What a writer wrote: the folder to give ``--dataset``, the labels table, and per patient (in the
    table's order) its id, its witness share, its true risk (log-hazard) or noiseless target, and its outcome;
    ``oracle`` is Harrell's C (survival) or R^2 (regression) of that truth on these patients."""

    features: Path
    labels: Path
    task: str
    slides: tuple[str, ...]
    patients: tuple[str, ...]
    share: np.ndarray = field(compare=False, repr=False)
    truth: np.ndarray = field(compare=False, repr=False)
    outcome: dict = field(compare=False, repr=False)  # "time" and "event", or "target": arrays per patient
    oracle: float = 0.0
    direction: np.ndarray | None = field(default=None, compare=False, repr=False)
    n_instances: int = 0

    @property
    def censored(self) -> float | None:
        """The share of censored patients (survival), else ``None``."""
        return None if self.task != "survival" else float(1 - np.mean(self.outcome["event"]))


def write_survival_cohort(root, n_patients: int = 240, n_features: int = 32, seed: int = 0,
                          patches: tuple[int, int] = SIZED_PATCHES, max_share: float = MAX_SHARE,
                          log_hazard_ratio: float = 2.0, shape: float = 1.0, censored: float = 0.4) -> OutcomeCohort:
    """Write a survival cohort of ``n_patients`` under ``root`` (see the module's docstring); ``censored`` is
    the share of patients whose censoring time comes first, met to within one patient."""
    from sksurv.metrics import concordance_index_censored

    if not 0 <= censored < 1:
        raise ValueError(f"censored must be in [0, 1), got {censored}")
    if shape <= 0:
        raise ValueError(f"shape must be positive, got {shape}")
    rng, features, patients, rows, share, n_instances, direction = _write_slides(
        root, n_patients, n_features, seed, patches, max_share)
    risk = log_hazard_ratio * share / max_share
    death = BASELINE_SCALE * (rng.standard_exponential(n_patients) * np.exp(-risk)) ** (1 / shape)
    censoring = _censoring_scale(death, rng.standard_exponential(n_patients), censored)
    event = death <= censoring
    time = np.maximum(np.round(np.minimum(death, censoring), TIME_DECIMALS), 10.0 ** -TIME_DECIMALS)
    if not event.any():
        raise ValueError("no patient has an event: ask for fewer censored or more patients")
    labels = _write_labels(root, ("time", "event"), rows,
                           {p: (f"{t:.{TIME_DECIMALS}f}", int(e)) for p, t, e in zip(patients, time, event)})
    oracle = float(concordance_index_censored(event, time, risk)[0])
    return OutcomeCohort(features, labels, "survival", tuple(slide for _, slide in rows), tuple(patients), share,
                         risk, {"time": time, "event": event}, oracle, direction, n_instances)


def write_regression_cohort(root, n_patients: int = 240, n_features: int = 32, seed: int = 0,
                            patches: tuple[int, int] = SIZED_PATCHES, max_share: float = MAX_SHARE,
                            noise: float = 5.0) -> OutcomeCohort:
    """Write a regression cohort of ``n_patients`` under ``root`` (see the module's docstring): the target is
    the witness share in percent plus noise of standard deviation ``noise``."""
    from sklearn.metrics import r2_score

    if noise < 0:
        raise ValueError(f"noise must be at least 0, got {noise}")
    rng, features, patients, rows, share, n_instances, direction = _write_slides(
        root, n_patients, n_features, seed, patches, max_share)
    truth = 100 * share
    target = np.round(truth + noise * rng.standard_normal(n_patients), TARGET_DECIMALS)
    labels = _write_labels(root, ("target",), rows,
                           {p: (f"{t:.{TARGET_DECIMALS}f}",) for p, t in zip(patients, target)})
    oracle = float(r2_score(target, truth))
    return OutcomeCohort(features, labels, "regression", tuple(slide for _, slide in rows), tuple(patients), share,
                         truth, {"target": target}, oracle, direction, n_instances)


def _write_slides(root, n_patients, n_features, seed, patches, max_share):
    """Every patient's slides under ``root``; the random stream (to draw the outcomes from next), the feature
    folder, the patients, ``(patient, slide)`` rows, each patient's share of witness patches, the patches
    written and the witnesses' direction."""
    import h5py

    if n_patients < 2:
        raise ValueError(f"a cohort needs at least 2 patients, got {n_patients}")
    if not 0 < max_share <= 1:
        raise ValueError(f"max_share must be in (0, 1], got {max_share}")
    root = Path(root)
    folder = root / TRIDENT_MAG / f"features_{TRIDENT_ENCODER}"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    direction = rng.standard_normal(n_features)
    direction /= np.linalg.norm(direction)
    patients, rows, share, n_instances = [], [], np.empty(n_patients), 0
    for index in range(n_patients):
        patient = f"patient-{index:04d}"
        drawn = rng.uniform(0, max_share)
        offset = CASE_SPREAD * rng.standard_normal(n_features)
        witnesses = total = 0
        for s in range(int(rng.integers(SLIDES_PER_PATIENT[0], SLIDES_PER_PATIENT[1] + 1))):
            features, coords = _sized_slide(rng, direction, offset, True, tuple(patches), drawn)
            with h5py.File(folder / f"{patient}-slide-{s}.h5", "w") as f:
                f.create_dataset("features", data=features)
                f.create_dataset("coords", data=coords)
            witnesses += witness_count(len(features), drawn)
            total += len(features)
            rows.append((patient, f"{patient}-slide-{s}"))
        patients.append(patient)
        share[index] = witnesses / total
        n_instances += total
    return rng, root, patients, rows, share, n_instances, direction


def _censoring_scale(death: np.ndarray, unit: np.ndarray, censored: float) -> np.ndarray:
    """Censoring times ``scale * unit`` (``unit`` standard exponential, drawn apart from the deaths), the
    scale found by bisection so that the share of patients censored before their death is ``censored``."""
    if censored == 0:
        return np.full_like(death, np.inf)
    ratio = death / unit  # censored before death when scale < ratio
    low, high = np.log(ratio.min()) - 1, np.log(ratio.max()) + 1
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if np.mean(np.exp(middle) < ratio) > censored else (low, middle)
    return np.exp(high) * unit


def _write_labels(root, columns: tuple[str, ...], rows, outcome: dict) -> Path:
    """The labels table: a row per slide, the patient's outcome on each."""
    path = Path(root) / OUTCOME_LABELS_FILE
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(("case_id", "slide_id", *columns))
        writer.writerows((patient, slide, *outcome[patient]) for patient, slide in rows)
    return path


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m automil_datasets.outcomes", description=__doc__.split("\n")[0])
    parser.add_argument("out", help="the folder to write")
    parser.add_argument("--task", choices=TASKS, default="survival")
    parser.add_argument("--patients", type=int, default=240)
    parser.add_argument("--features", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    write = write_survival_cohort if args.task == "survival" else write_regression_cohort
    cohort = write(args.out, args.patients, args.features, args.seed)
    censored = "" if cohort.censored is None else f", {cohort.censored:.0%} censored"
    print(f"{len(cohort.slides)} slides of {len(cohort.patients)} patients in {cohort.features}{censored}; "
          f"labels in {cohort.labels}; oracle {'C' if args.task == 'survival' else 'R2'} {cohort.oracle:.3f}")


if __name__ == "__main__":
    main()
