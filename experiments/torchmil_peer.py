"""torchmil's networks trained by torchmil's own recipe on a slide cohort's outer folds: the optional peer of
``experiments/scale.py compare`` (needs ``python -m pip install torchmil==1.0.2``; automil does not depend on it).

    python experiments/torchmil_peer.py COHORT [--run WORKDIR [--storage URL]] [--folds 6] [--seed 0]
                                  [--models ABMIL DSMIL CLAM_SB TransMIL] [--epochs 20] [--select accuracy|loss]

COHORT is a folder written by ``python experiments/scale.py cohort`` (its labels and groups are read from the facts
JSON beside it, as ``compare`` does). The outer folds are those automil's nested protocol draws for that
cohort (``automil.evaluation.folds.bag_folds`` with ``--folds`` and ``--seed``, the cases as groups); with
``--run`` (the ``--workdir`` of a ``compare`` or ``run``) they are read from that run's study storage, its
folds and seed taken from there, and checked equal to the drawn ones.

The recipe is torchmil's WSI notebook (``examples/wsi_classification.ipynb``): every model at its
constructor's defaults, ``torchmil.utils.trainer.Trainer`` with Adam at lr 1e-4, one bag a step, a
validation split of 20% of the training bags (stratified; here whole cases, since a case has 2 or 3 slides),
the weights of the epoch with the best validation accuracy, ``--epochs`` epochs; ``--select loss`` keeps
instead those of the lowest validation loss, as torchmil's CT-scan notebook does. Each model is trained on
each outer split's training folds and its ``predict`` scores the outer fold; the script prints one markdown
line per model (ROC AUC, mean and sample sd over the outer folds, and the seconds it took) below the
oracle's on the same split and on all slides.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import cohorts  # experiments/ is on sys.path when this script runs
import numpy as np

import automil
from automil.evaluation.folds import bag_folds
from automil.evaluation.metrics import mean_std
from automil.tune.options import DEFAULT_FOLDS

MODELS = ("ABMIL", "DSMIL", "CLAM_SB", "TransMIL")
LR = 1e-4  # the notebook's
VALIDATION_SHARE = 0.2  # the notebook's train_test_split(test_size=0.2)
# The weights kept: the WSI notebook's best validation accuracy, or the CT-scan notebook's lowest validation
# BCE (examples/ctscan_classification.ipynb), the Trainer's objective and its mode.
SELECT = {"accuracy": ("acc", "max"), "loss": ("BCEWithLogitsLoss", "min")}


def require_torchmil():
    try:
        import torchmil  # noqa: F401
    except ImportError:
        raise SystemExit("experiments/torchmil_peer.py needs torchmil: python -m pip install torchmil==1.0.2") from None


def load_cohort(data: Path):
    """The cohort's bags (labels and cases from the facts JSON beside it) and its facts."""
    facts_file = data.parent / f"{data.name}.json"
    facts = json.loads(facts_file.read_text())
    bags = automil.load_bags(str(data), labels=str(data.parent / facts["labels"]), groups=facts["groups"])
    return bags, facts


def outer_split(bags, run: str | None, storage: str | None, n_folds: int, seed: int) -> np.ndarray:
    """Every bag's outer fold: drawn as automil's nested protocol draws it, and with ``run`` the run's own,
    read from its study storage and checked equal to the drawn one."""
    if run is None:
        return bag_folds(bags.y, n_folds, seed, bags.groups)
    work = Path(run)
    rows = json.loads((work / "rows.json").read_text())
    row = next(r for r in rows if r.get("learner") in automil.learners() and r.get("study"))
    stored, protocol = cohorts.run_folds(work, storage, row["study"])
    if protocol != "nested" or len(stored) != bags.n_bags:
        raise SystemExit(f"the run in {run} is {protocol} over {len(stored)} bags; this needs a nested run on "
                         f"these {bags.n_bags} slides")
    drawn = bag_folds(bags.y, int(stored.max()) + 1, row.get("seed") or 0, bags.groups)
    if not np.array_equal(stored, drawn):
        raise SystemExit(f"the run's stored folds differ from bag_folds' with seed {row.get('seed') or 0}")
    return stored


def build(name: str, n_features: int):
    import torchmil.models

    return getattr(torchmil.models, name)(in_shape=(n_features,))


def as_bags(bags, positive: np.ndarray, index) -> list[dict]:
    """The bags at ``index`` as torchmil's datasets give them: ``X`` (instances, features) and ``Y``."""
    import torch

    return [{"X": torch.from_numpy(np.asarray(bags.X[bags.offsets[i]:bags.offsets[i + 1]], dtype=np.float32)),
             "Y": torch.tensor(float(positive[i]))} for i in index]


def validation_part(bags, train: np.ndarray, seed: int) -> np.ndarray:
    """A fifth of the training bags, whole cases, stratified: the notebook's validation split."""
    folds = bag_folds(bags.y[train], round(1 / VALIDATION_SHARE), seed, bags.groups[train])
    return folds == 0


def fit_and_score(name: str, bags, positive, train: np.ndarray, test: np.ndarray, epochs: int, seed: int,
                  select: str):
    """Train ``name`` by the recipe on ``train`` and return its scores on ``test`` and the best validation
    figure (``select``)."""
    import torch
    import torchmetrics
    from torchmil.data import collate_fn
    from torchmil.models import MILModelWrapper
    from torchmil.utils.trainer import Trainer

    torch.manual_seed(seed)
    held = validation_part(bags, train, seed)
    loader = torch.utils.data.DataLoader
    fit = loader(as_bags(bags, positive, train[~held]), batch_size=1, shuffle=True, collate_fn=collate_fn)
    val = loader(as_bags(bags, positive, train[held]), batch_size=1, shuffle=False, collate_fn=collate_fn)
    model = build(name, bags.X.shape[1])
    objective, mode = SELECT[select]
    trainer = Trainer(model=model, optimizer=torch.optim.Adam(model.parameters(), lr=LR),
                      metrics_dict={"acc": torchmetrics.Accuracy(task="binary")}, obj_metric=objective,
                      obj_metric_mode=mode, device="cpu", disable_pbar=True, verbose=False)
    trainer.train(max_epochs=epochs, train_dataloader=fit, val_dataloader=val)
    best = MILModelWrapper(trainer.get_best_model()).eval()
    with torch.no_grad():
        scores = [float(best.predict(collate_fn([bag]), return_inst_pred=False)) for bag in
                  as_bags(bags, positive, test)]
    return np.asarray(scores), trainer.best_obj_metric


def run_model(name: str, bags, positive, assignment, epochs: int, seed: int, select: str) -> tuple[list[float], float]:
    """``name``'s ROC AUC on every outer fold, and the seconds it took."""
    from sklearn.metrics import roc_auc_score

    aucs, start = [], time.monotonic()
    for fold in range(int(assignment.max()) + 1):
        train, test = np.flatnonzero(assignment != fold), np.flatnonzero(assignment == fold)
        scores, best = fit_and_score(name, bags, positive, train, test, epochs, seed, select)
        aucs.append(float(roc_auc_score(positive[test], scores)))
        print(f"  {name} outer fold {fold}: ROC AUC {100 * aucs[-1]:.1f} (best validation {select} {best:.3f}), "
              f"{time.monotonic() - start:.0f} s so far", flush=True)
    return aucs, time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="a cohort folder written by experiments/scale.py cohort")
    parser.add_argument("--run", help="the working directory of an automil run on it: take its outer folds")
    parser.add_argument("--storage", help="the run's --storage, where it gave one (default: its journal)")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--select", choices=SELECT, default="accuracy",
                        help="the weights kept: the epoch of the best validation accuracy (the WSI notebook's) "
                        "or of the lowest validation loss (the CT-scan notebook's)")
    parser.add_argument("--folds", type=int, default=DEFAULT_FOLDS, help="outer folds, without --run")
    parser.add_argument("--seed", type=int, default=0, help="automil tune's --seed, without --run")
    args = parser.parse_args()
    require_torchmil()
    data = Path(args.data).resolve()
    bags, facts = load_cohort(data)
    assignment = outer_split(bags, args.run, args.storage, args.folds, args.seed)
    positive = bags.y == bags.classes[-1]
    n_folds = int(assignment.max()) + 1
    oracle = cohorts.oracle_on_split(cohorts.oracle_scores(bags, facts["direction"]), positive, assignment,
                                     list(range(n_folds)))["roc_auc"]
    source = f"the run in {args.run}" if args.run else f"drawn with seed {args.seed}"
    print(f"{data.name}: {bags.n_bags} slides, {n_folds} outer folds ({source}), torchmil {_version()}, "
          f"{args.epochs} epochs", flush=True)
    lines = []
    for name in args.models:
        aucs, seconds = run_model(name, bags, positive, assignment, args.epochs, args.seed, args.select)
        mean, sd = mean_std(aucs)
        lines.append(f"| {name} | {100 * mean:.1f} ± {100 * sd:.1f} | {seconds:.0f} |")
    print(f"\noracle ROC AUC {100 * oracle:.1f} on the same split, {100 * facts['oracle_roc_auc']:.1f} on all slides")
    print(f"| torchmil {_version()} model, {args.epochs} epochs, best validation {args.select} | ROC AUC, "
          f"{n_folds} outer folds | seconds |")
    print("| --- | ---: | ---: |")
    print("\n".join(lines))


def _version() -> str:
    from importlib.metadata import version

    return version("torchmil")


if __name__ == "__main__":
    main()
