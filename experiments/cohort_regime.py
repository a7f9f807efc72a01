"""The portfolio's "cohorts" regime: generated TRIDENT cohorts of slides of thousands of patches, and the
configurations scored on them (``experiments/portfolio.py`` scores, selects and reports them).

    python experiments/cohort_regime.py write [--root cohort-regime]     # the cohorts (5.9 GB), then
    python experiments/portfolio.py build --cohort-root cohort-regime --storage journal:cohorts.journal
    python experiments/cohort_regime.py delete [--root cohort-regime]

The cohorts are ``experiments/large_cohort.py``'s (cases of 2 or 3 slides, every patch of a case carrying the
case's offset, the witnesses in one region of a tumour slide) at seeds and sizes no document reports: 80 to 100
slides of 2,000 to 6,000 patches (a mean bag of at least 2,000, the regime's bound), 384 to 1,536 features,
witness shares 0.5% to 5%; small enough that 2 cores score the matrix in well under an hour. Their cells
cross-validate over cases and are scored by ROC AUC, the metric a cohort is reported in.

The candidates are the learners a cohort affords: witness-subspace at points of its directions and tail (its
``max_instances`` is no parameter of its space, so no member can hold it: it stays at its default), mifv's and
bag-stats' first trials, and the networks' members of "slides by patient" (a case-grouped regime too).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("cohort-regime")  # where the cohorts are written unless --root says
# witness-subspace's points (n_directions, tail): the directions at the default tail, the tails at one and four
# directions (a cross, not the full grid: what 2 cores score in the time the matrix had)
GRID = ((1, 0.003), (1, 0.01), (1, 0.03), (2, 0.01), (4, 0.003), (4, 0.01), (4, 0.03), (8, 0.01))
FIRST_TRIALS_OF = ("mifv", "bag-stats")  # their first trials, as a study starts them
NETWORK_MEMBERS_OF = "slides by patient"  # the networks' members of this regime, scored here too


@dataclass(frozen=True)
class RegimeCohort:
    """One generated cohort of the regime: ``large_cohort.py``'s arguments."""

    slides: int
    patches: tuple[int, int]
    n_features: int
    witness_share: float
    seed: int

    @property
    def name(self) -> str:
        return (f"cohort-s{self.slides}-i{self.patches[0]}-{self.patches[1]}-d{self.n_features}"
                f"-w{self.witness_share:g}-seed{self.seed}")

    def folder(self, root: Path) -> Path:
        return Path(root) / self.name


# Seeds 101-106: no reported cohort uses them (the reported ones are seeds 0-3).
COHORTS = (RegimeCohort(96, (2000, 4000), 384, 0.02, 101), RegimeCohort(96, (2000, 4000), 768, 0.01, 102),
           RegimeCohort(80, (2000, 3000), 1536, 0.03, 103), RegimeCohort(100, (3000, 6000), 768, 0.005, 104),
           RegimeCohort(90, (2000, 4000), 384, 0.05, 105), RegimeCohort(80, (2000, 4000), 1536, 0.01, 106))
BY_NAME = {c.name: c for c in COHORTS}


def configurations() -> list[dict]:
    """The regime's candidates, ``{"config", "learner", "params"}`` as ``portfolio.py`` stores them; the grid
    point of witness-subspace's own defaults (the estimator's) is its ``:default``."""
    from automil import plugins
    from automil.tune.portfolio.members import read_portfolio
    from automil_embedding.witness_subspace import WitnessSubspace

    first, defaults = plugins.get_learner("witness-subspace").first_trial, WitnessSubspace().get_params()
    configs = []
    for n_directions, tail in GRID:
        params = {**first, "n_directions": n_directions, "tail": tail}
        own = n_directions == defaults["n_directions"] and tail == defaults["tail"]
        rank = "default" if own else f"d{n_directions}-t{tail:g}"
        configs.append({"config": f"witness-subspace:{rank}", "learner": "witness-subspace", "params": params})
    configs += [{"config": f"{name}:default", "learner": name, "params": dict(plugins.get_learner(name).first_trial)}
                for name in FIRST_TRIALS_OF]
    networks = [m for m in read_portfolio()[NETWORK_MEMBERS_OF] if "centre_bags" in plugins.get_learner(m.learner)
                .first_trial]
    configs += [{"config": f"{m.learner}:{NETWORK_MEMBERS_OF.replace(' ', '-')}", "learner": m.learner,
                 "params": m.params} for m in networks]
    return configs


def load(name: str, root: Path):
    """The bags of the regime's cohort ``name`` written under ``root``, grouped by case."""
    from large_cohort import TRIDENT_MAG

    from automil import load_bags
    from automil_datasets.slides import LABELS_FILE, TRIDENT_ENCODER

    folder = BY_NAME[name].folder(root)
    return load_bags(str(folder / TRIDENT_MAG / f"features_{TRIDENT_ENCODER}"), labels=str(folder / LABELS_FILE),
                     groups="case_id")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("write", "delete"))
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    from large_cohort import facts_path, write_large_cohort

    for cohort in COHORTS:
        folder = cohort.folder(args.root)
        if args.command == "delete":
            shutil.rmtree(folder, ignore_errors=True)
            facts_path(folder).unlink(missing_ok=True)
        elif not facts_path(folder).exists():  # the facts are written last: a cohort cut short is written again
            facts = write_large_cohort(folder, cohort.slides, cohort.patches, cohort.n_features, cohort.witness_share,
                                       cohort.seed)
            print(f"{cohort.name}: {facts['bytes'] / 1e9:.2f} GB, oracle ROC AUC {facts['oracle_roc_auc']:.3f}",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
