"""The hand recipe: attention MIL trained on a slide cohort the way a pathology user trains it (CLAM's recipe,
no search), on a case-grouped hold-out: the anchor the main job is measured against at the same budget.

    python experiments/hand_recipe.py COHORT [--labels CSV] [--groups case_id] [--folds FOLDS_JSON]
        [--budget SECONDS] [--epochs 50] [--patience 20] [--min-epochs 10] [--max-instances N]
        [--hidden 512] [--seed 0] [--threads N] [--scratch DIR]

COHORT is a slide feature folder (TRIDENT or CLAM layout, e.g. one ``experiments/large_cohort.py`` writes), read
as ``automil tune --dataset COHORT --labels CSV --groups case_id`` reads it (``automil.load_bags`` into the run's
mapped file under ``--scratch``, default a temporary folder; the labels default to ``COHORT/slides.csv``).

The hold-out: with ``--folds`` (a run's ``folds.json``, its MLflow artifact) that run's outer fold 0, so the
figure stands beside the run's ``automil`` row on the same slides; else fold 0 of 4 case-grouped, stratified
folds (``automil.bag_folds``, ``--seed``). The validation split is fold 0 of 5 of the remaining cases, drawn
the same way: whole cases, never a slide of a held-out or training case.

The recipe (CLAM's, Lu et al. 2021; the attention network of the deep plugin, ``automil_deep.networks.ABMIL``,
gated, ``--hidden`` 512-256-128, dropout 0.25): raw features (no standardization), one slide a step with all
its patches (``--max-instances`` cuts a slide to that many, drawn as the plugin's training draws them), Adam at
lr 2e-4 and weight decay 1e-5, cross-entropy, at most ``--epochs``; early stopping on the validation slides'
loss: from ``--min-epochs`` on the weights of the lowest loss are kept, and training stops after
``--patience`` epochs without a lower one (the plugin's ``fit_network``, which trains it). Printed per epoch:
its seconds, the mean training loss, the validation loss and AUC; at the end the held-out ROC AUC of the
weights kept, and with ``--budget`` that of the weights kept by the budget: the lowest validation loss among
the epochs that ended within ``--budget`` seconds of the script's start (reading the cohort included, as a
run's ``--timeout`` counts it), or the last such epoch when none is past ``--min-epochs``. With ``--budget``
training also stops when another epoch would leave less than an epoch's time before it (``fit_network``'s
``end``), as a user who has that long would stop.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import automil

HOLD_OUT_FOLDS = 4  # a quarter of the cases held out
VALIDATION_FOLDS = 5  # a fifth of the training cases for early stopping
LR, WEIGHT_DECAY, DROPOUT = 2e-4, 1e-5, 0.25  # CLAM's


def read_cohort(folder: Path, labels: Path, groups: str, scratch: Path):
    """The cohort's bags, mapped from the run's file under ``scratch`` as ``automil tune`` reads a folder."""
    from automil.data.instance_matrix import writing_instances

    with writing_instances(scratch / "instances.npy"):
        return automil.load_bags(str(folder), labels=str(labels), groups=groups)


def held_out_slides(bags, y: np.ndarray, folds_file: str | None, seed: int) -> np.ndarray:
    """Whether each slide is held out: a run's outer fold 0 (``folds_file``), else fold 0 of case folds."""
    if folds_file is None:
        return automil.bag_folds(y, HOLD_OUT_FOLDS, seed, bags.groups) == 0
    from automil.evaluation.folds_file import read_fold_file

    held, names = set(read_fold_file(folds_file).tuning[0]), list(bags.names)
    missing = held - set(names)
    if missing:
        raise SystemExit(f"{folds_file}: {len(missing)} held-out slide(s) not in the cohort, e.g. {sorted(missing)[0]}")
    return np.array([name in held for name in names])


def roc_auc(y: np.ndarray, logits: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, logits[:, 1] - logits[:, 0]))


def main(argv=None) -> None:
    started = time.monotonic()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cohort", help="a slide feature folder (TRIDENT or CLAM layout)")
    parser.add_argument("--labels", help="the labels table (default: COHORT/slides.csv)")
    parser.add_argument("--groups", default="case_id", help="the labels table's case column (default case_id)")
    parser.add_argument("--folds", help="a run's folds.json: its outer fold 0 is the hold-out")
    parser.add_argument("--budget", type=float,
                        help="seconds from the start: the held-out AUC of the weights kept by then")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--patience", type=int, default=20)
    parser.add_argument("--min-epochs", type=int, default=10)
    parser.add_argument("--max-instances", type=int, help="patches of a slide a step sees (default: all)")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, help="torch threads (default: OMP_NUM_THREADS, else torch's)")
    parser.add_argument("--scratch", help="where the run's mapped file is written (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # the share seeded_torch gives the fit
    from automil_deep.networks import ABMIL
    from automil_deep.training import Batches, evaluate, fit_network, matrix_rows, seeded_torch

    folder = Path(args.cohort)
    labels = Path(args.labels) if args.labels else folder / "slides.csv"
    with tempfile.TemporaryDirectory(prefix="automil-hand-recipe-", dir=args.scratch) as scratch:
        bags = read_cohort(folder, labels, args.groups, Path(scratch))
        classes, y = np.unique(bags.y, return_inverse=True)
        if len(classes) != 2:
            raise SystemExit(f"{labels}: the recipe scores ROC AUC on two classes, got {len(classes)}: {list(classes)}")
        held = held_out_slides(bags, y, args.folds, args.seed)
        training = np.flatnonzero(~held)
        inner = automil.bag_folds(y[training], VALIDATION_FOLDS, args.seed, bags.groups[training])
        train, validation = training[inner != 0], training[inner == 0]
        print(f"{bags.n_bags} slides, {bags.n_instances} patches x {bags.n_features} ({bags.X.dtype}), read in "
              f"{time.monotonic() - started:.0f} s; {len(train)} training, {len(validation)} validation, "
              f"{int(held.sum())} held-out slides (positive: {classes[1]})", flush=True)
        batches = Batches(matrix_rows(bags.X, bags.offsets), bags.sizes, bags.n_features)
        by_budget = {"state": None, "epoch": 0}

        def on_epoch(epoch):
            auc, clock = roc_auc(y[validation], epoch.validation_logits), time.monotonic() - started
            print(f"epoch {epoch.number:3d}  {epoch.seconds:7.1f} s (at {clock:.0f} s)  train loss "
                  f"{epoch.train_loss:.4f}  validation loss {epoch.validation_loss:.4f}  AUC {auc:.4f}"
                  f"{'  kept' if epoch.kept else ''}", flush=True)
            if args.budget is not None and clock <= args.budget and (
                    epoch.kept or epoch.number < args.min_epochs):
                by_budget["state"] = {name: value.clone() for name, value in network.state_dict().items()}
                by_budget["epoch"] = epoch.number

        with seeded_torch(args.seed):
            network = ABMIL(bags.n_features, 2, args.hidden, DROPOUT, gated=True)
            result = fit_network(network, batches, y, train, validation, learning_rate=LR,
                                 weight_decay=WEIGHT_DECAY, epochs=args.epochs, batch_size=1,
                                 max_instances=args.max_instances, patience=args.patience,
                                 rng=np.random.default_rng(args.seed), min_epochs=args.min_epochs,
                                 class_weight=None, report=False, on_epoch=on_epoch,
                                 end=None if args.budget is None else started + args.budget)
            test = np.flatnonzero(held)
            final = roc_auc(y[test], evaluate(network, batches, test, instance_scores=False)[0])
            print(f"held-out ROC AUC {final:.4f}: the weights of epoch {result.kept} of {result.run} "
                  f"({time.monotonic() - started:.0f} s from the start)")
            if args.budget is not None:
                if by_budget["state"] is None:
                    print(f"no epoch ended within the budget of {args.budget:g} s")
                    return
                network.load_state_dict(by_budget["state"])
                at_budget = roc_auc(y[test], evaluate(network, batches, test, instance_scores=False)[0])
                print(f"held-out ROC AUC at the budget of {args.budget:g} s {at_budget:.4f}: the weights of epoch "
                      f"{by_budget['epoch']}")


if __name__ == "__main__":
    sys.exit(main())
