"""Slide cohorts at several witness shares, the max-pooling oracle, and every learner's defaults alone on a
run's outer split: the parts of ``experiments/scale.py cohort`` and ``experiments/scale.py compare``.

A cohort is written by ``automil_datasets.slides.write_slide_set``: cases (patients) of 2 or 3 slides, half
of them tumour (string labels ``normal_tissue`` / ``tumor_tissue``, the groups in the table's ``case_id``),
every slide of ``patches`` patches (uniform in the range) of ``features`` features, and on a tumour slide
``witness_share`` of them (at least one) shifted by 3.5 along one unit direction; every patch of a case
carries the case's own offset. The oracle scores a slide by its largest patch projection on that direction
(the generator's, stored in the facts JSON), without training.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from automil.data.instance_matrix import writing_instances

SLIDES_PER_CASE = 2.5  # write_slide_set draws 2 or 3 slides a case
ORACLE_BLOCK_ROWS = 1 << 16  # rows projected at once: 512 MB of float64 at 1,024 features


@dataclass(frozen=True)
class Cohort:
    """The parameters of one cohort; equal parameters give equal slides."""

    slides: int  # asked for: the cases are slides / 2.5, so the count written is near it, not equal
    witness_share: float = 0.03
    patches: tuple = (60, 180)
    n_features: int = 64
    seed: int = 0
    layout: str = "trident"

    @property
    def n_cases(self) -> int:
        return max(2, round(self.slides / SLIDES_PER_CASE))

    @property
    def name(self) -> str:
        return f"cohort-{self.slides}-w{self.witness_share:g}-d{self.n_features}" + (
            f"-s{self.seed}" if self.seed else "")


def write_cohort(spec: Cohort, out: Path) -> tuple[Path, dict]:
    """Write the cohort's folder under ``out`` and its facts JSON beside it; the folder and the facts."""
    import automil
    from automil_datasets.slides import write_slide_set

    root = out / spec.name
    written = write_slide_set(root, spec.layout, spec.n_cases, spec.n_features, spec.seed, pt=False,
                              patches=tuple(spec.patches), witness_share=spec.witness_share)
    # read into a mapped scratch file, as a run reads it: a cohort may be larger than memory
    with tempfile.TemporaryDirectory(prefix="automil-cohort-") as scratch, \
            writing_instances(Path(scratch) / "instances.npy"):
        bags = automil.load_bags(written.features, labels=str(written.labels), groups="case_id")
        figures = oracle_figures(oracle_scores(bags, written.direction), bags.y == bags.classes[-1])
    facts = {**asdict(spec), "n_cases": spec.n_cases, "n_bags": bags.n_bags, "n_instances": bags.n_instances,
             "n_tumour": int((bags.y == bags.classes[-1]).sum()), "labels": f"{spec.name}/{written.labels.name}",
             "groups": "case_id", **{f"oracle_{k}": v for k, v in figures.items()},
             "direction": written.direction.tolist()}
    (out / f"{spec.name}.json").write_text(json.dumps(facts, indent=2) + "\n")
    return written.features, facts


def oracle_scores(bags, direction) -> np.ndarray:
    """Every bag's largest instance projection on ``direction``, in float64 a block of rows at a time."""
    direction = np.asarray(direction, dtype=np.float64)
    step = ORACLE_BLOCK_ROWS
    projection = np.concatenate([np.asarray(bags.X[start:start + step], dtype=np.float64) @ direction
                                 for start in range(0, bags.n_instances, step)])
    return np.maximum.reduceat(projection, np.asarray(bags.offsets[:-1]))


def best_bacc_threshold(scores, positive) -> tuple[float, float]:
    """The balanced accuracy of the best cut of ``scores`` (positive above it), and that cut."""
    scores, positive = np.asarray(scores, dtype=np.float64), np.asarray(positive, dtype=bool)
    order = np.argsort(-scores, kind="stable")
    tp, fp = np.cumsum(positive[order]), np.cumsum(~positive[order])
    bacc = (tp / max(tp[-1], 1) + 1 - fp / max(fp[-1], 1)) / 2  # cutting after each bag of the ranking
    best = int(np.argmax(bacc))
    if bacc[best] <= 0.5:
        return 0.5, np.inf  # no cut beats calling every bag negative
    cut = scores[order][best]
    below = scores[scores < cut]
    return float(bacc[best]), float((cut + below.max()) / 2 if below.size else cut - 1.0)


def oracle_figures(scores, positive) -> dict:
    """ROC AUC and best-threshold balanced accuracy of ``scores`` on all the bags (optimistic: the cut is
    chosen on the bags it is scored on)."""
    from sklearn.metrics import roc_auc_score

    return {"roc_auc": float(roc_auc_score(positive, scores)), "bacc": best_bacc_threshold(scores, positive)[0]}


def oracle_on_split(scores, positive, assignment, outer: list[int]) -> dict:
    """The oracle on a run's outer folds, mean over them: ROC AUC of the scores on each outer fold, and
    balanced accuracy of the cut chosen on its training folds applied to it."""
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    positive = np.asarray(positive, dtype=bool)
    auc, bacc = [], []
    for fold in outer:
        test = assignment == fold
        cut = best_bacc_threshold(scores[~test], positive[~test])[1]
        auc.append(roc_auc_score(positive[test], scores[test]))
        bacc.append(balanced_accuracy_score(positive[test], scores[test] > cut))
    return {"roc_auc": float(np.mean(auc)), "balanced_accuracy": float(np.mean(bacc))}


# ---- compare: every learner's defaults alone on the run's outer split ----------------------------------
def run_folds(work: Path, storage: str | None, study: str) -> tuple[np.ndarray, str]:
    """The fold of every bag and the protocol, as the run stored them with its main study ``study``."""
    import optuna

    from automil.tune.backend.optuna_storage import open_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = storage or f"journal:{work / 'studies' / 'automil.journal'}"
    if url.startswith("journal:") and not Path(url.removeprefix("journal:")).is_absolute():
        url = f"journal:{work / url.removeprefix('journal:')}"  # the run's working directory
    attrs = optuna.load_study(study_name=study, storage=open_storage(url)).user_attrs
    return np.asarray(attrs["fold_assignment"]), attrs["protocol"]


def outer_folds(protocol: str, n_folds: int) -> list[int]:
    """The outer folds the run's headline was scored on: fold 0 (hold-out), every fold (nested); under
    ``tuned`` there are none, and every fold stands in for them."""
    return [0] if protocol == "holdout" else list(range(n_folds))


def defaults_params(name: str, bags) -> dict:
    """The estimator parameters of the learner's first trial (its defaults) on ``bags``, as the driver maps
    them through its search space; ``{}`` (the estimator's own defaults) when its plugin gives none."""
    import automil
    from automil.tune.portfolio.members import estimator_params

    spec = automil.get_learner(name)
    return estimator_params(spec, dict(spec.first_trial), bags) if spec.first_trial else {}


def defaults_alone(worker, bags, name: str, assignment, outer: list[int], seed: int, fit_timeout: float) -> dict:
    """The learner at its defaults, fitted on each outer split's training folds in ``worker`` (killed at
    ``fit_timeout``) and scored on its outer fold: the mean figures over the outer folds."""
    import optuna

    from automil.evaluation.metrics import fold_scores
    from automil.tune.workers.fits import fit_predict, import_for
    from automil.tune.workers.isolation import FitError, FitMemoryExceeded, FitTimeout, WorkerDied

    try:
        params = defaults_params(name, bags)
    except optuna.TrialPruned as refused:
        return {"status": "refused", "error": str(refused)}
    import_for(worker, (name,))
    folds, start = [], time.monotonic()
    for fold in outer:
        train, test = np.flatnonzero(assignment != fold), np.flatnonzero(assignment == fold)
        try:
            out = worker.call(fit_predict, name, params, train, test, seed, timeout=fit_timeout)
        except FitTimeout:
            return {"status": "T/O", "seconds": time.monotonic() - start}
        except (FitError, FitMemoryExceeded, WorkerDied) as error:
            return {"status": "failed", "error": str(error).splitlines()[0][:200],
                    "seconds": time.monotonic() - start}
        folds.append(fold_scores(bags.y[test], out.y_pred, out.scores, bags.classes))
    auc = [f.roc_auc for f in folds]
    return {"status": "ok", "balanced_accuracy": float(np.mean([f.balanced_accuracy for f in folds])),
            "accuracy": float(np.mean([f.accuracy for f in folds])),
            "roc_auc": None if None in auc else float(np.mean(auc)),
            "one_class": any(f.one_class for f in folds), "seconds": time.monotonic() - start}
