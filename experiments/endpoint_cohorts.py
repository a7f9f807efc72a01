"""Generated survival and regression cohorts with their oracles, and the figures a run's ``automil`` row is
held to, taken on that run's own outer folds.

The cohorts are ``automil_datasets.outcomes``' (patients of 1 to 3 TRIDENT slides, each patient's outcome a
known function of its share of witness patches). Writing one puts the folder at ``--out``, its labels table at
``OUT/labels.csv`` and the facts JSON ``OUT.json`` beside the folder, as ``experiments/cohorts.py`` does: the
parameters, the counts, the oracle on every patient and each patient's truth (true log-hazard or noiseless
target).

    python experiments/endpoint_cohorts.py survival   --out DIR [--patients 240] [--features 32] [--seed 0]
                                                      [--censored 0.4] [--shape 1] [--log-hazard-ratio 2]
    python experiments/endpoint_cohorts.py regression --out DIR [--patients 240] [--noise 5]
    python experiments/endpoint_cohorts.py on-run --out DIR --folds FOLDS_JSON [--outer 0 1 2 ...]

``on-run`` writes nothing: from a run's ``folds.json`` (its MLflow artifact) it prints, mean over the outer
folds, the oracle (R^2 of the noiseless target on each outer fold; for survival Harrell's and Uno's C of the
true risk, the integrated Brier score of the true survival curves and the log-rank p-value of the held-out
patients split at each fold's training median of the true risk) and, for survival, the Kaplan-Meier
baseline's integrated Brier score (the training folds' Kaplan-Meier curve given to every held-out patient),
each scored as a learner's fold is (``automil.evaluation.metrics.fold_scores``), and counts the patients
with bags on two sides of a split (the tuning folds' or a repeat's).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

from automil_datasets.outcomes import (
    BASELINE_SCALE,
    MAX_SHARE,
    OUTCOME_LABELS_FILE,
    TASKS,
    write_regression_cohort,
    write_survival_cohort,
)


def facts_path(out: Path) -> Path:
    """The facts JSON beside the cohort's folder."""
    return out.parent / f"{out.name}.json"


def write_cohort(task: str, out: Path, **parameters) -> dict:
    """Write a ``task`` cohort at ``out`` with the writer's ``parameters`` and its facts JSON; the facts."""
    out = Path(out)
    write = write_survival_cohort if task == "survival" else write_regression_cohort
    cohort = write(out, **parameters)
    oracle = "oracle_concordance" if task == "survival" else "oracle_r2"
    facts = {"task": task, **parameters, "n_patients": len(cohort.patients), "n_bags": len(cohort.slides),
             "n_instances": cohort.n_instances, "features": out.name, "labels": f"{out.name}/{OUTCOME_LABELS_FILE}",
             "bag_by": "case_id", oracle: cohort.oracle,
             **({"censored_share": cohort.censored} if task == "survival" else {}),
             "truth": dict(zip(cohort.patients, cohort.truth.tolist())), "direction": cohort.direction.tolist()}
    facts_path(out).write_text(json.dumps(facts, indent=2) + "\n")
    return facts


def on_run(out: Path, folds_file: Path, outer: list[int]) -> dict:
    """The oracle and (survival) the Kaplan-Meier baseline on a run's outer folds, mean over them, and how
    many patients have bags in two folds of the tuning folds or of any repeat."""
    from automil.evaluation.folds_file import read_fold_file

    out = Path(out)
    facts = json.loads(facts_path(out).read_text())
    rows = list(csv.DictReader(open(out / OUTCOME_LABELS_FILE)))
    patient = {row[key]: row["case_id"] for row in rows for key in ("case_id", "slide_id")}
    outcome = {row["case_id"]: row for row in rows}
    stored = read_fold_file(folds_file)
    split = set()  # patients with bags in two folds of the tuning folds or of a repeat
    for folds in (stored.tuning, *stored.repeats):
        sides = {}
        for fold, names in enumerate(folds):
            for name in names:
                sides.setdefault(patient[name], set()).add(fold)
        split |= {p for p, f in sides.items() if len(f) > 1}
    # one entry a patient: the figures are per patient, as a run with --bag-by case_id scores them
    fold_of = {patient[name]: fold for fold, names in enumerate(stored.tuning) for name in names}
    patients = np.array(sorted(fold_of))
    assignment = np.array([fold_of[p] for p in patients])
    truth = np.array([facts["truth"][p] for p in patients])
    figures = {"patients_on_two_sides": len(split)}
    if facts["task"] == "survival":
        from automil.endpoints import survival_labels

        y = survival_labels(np.array([float(outcome[p]["time"]) for p in patients]),
                            np.array([int(outcome[p]["event"]) for p in patients]))
        figures.update(_survival_on_folds(y, truth, facts, assignment, outer))
    else:
        from sklearn.metrics import r2_score

        target = np.array([float(outcome[p]["target"]) for p in patients])
        figures["oracle_r2"] = float(np.mean([r2_score(target[assignment == f], truth[assignment == f])
                                              for f in outer]))
    return figures


def _survival_on_folds(y, risk, facts: dict, assignment, outer: list[int]) -> dict:
    """On each outer fold, mean over them, by the rules that score a learner (``automil.evaluation.metrics.
    fold_scores``): Harrell's and Uno's C of the true risk, the integrated Brier score of the true survival
    curves (the oracle's) and of the training folds' Kaplan-Meier curve given to every patient (the baseline);
    and the log-rank p-value of the held-out patients split by the true risk as a run's figure splits them."""
    from sksurv.functions import StepFunction
    from sksurv.nonparametric import kaplan_meier_estimator

    from automil.endpoints import evaluation_times
    from automil.evaluation.metrics import fold_scores
    from automil.evaluation.survival_figures import kaplan_meier_split

    figures = {"oracle_concordance": [], "oracle_uno_concordance": [], "oracle_integrated_brier": [],
               "kaplan_meier_integrated_brier": []}
    for fold in outer:
        test, train = assignment == fold, assignment != fold
        times = evaluation_times(y[train], y[test])
        true_curves = np.exp(-np.outer(np.exp(risk[test]), (times / BASELINE_SCALE) ** facts["shape"]))
        oracle = fold_scores(y[test], risk[test], true_curves, y_train=y[train])
        x, survival = kaplan_meier_estimator(y["event"][train], y["time"][train])
        baseline = np.tile(StepFunction(np.r_[0.0, x], np.r_[1.0, survival])(times), (int(test.sum()), 1))
        figures["oracle_concordance"].append(oracle.concordance)
        figures["oracle_uno_concordance"].append(oracle.uno_concordance)
        figures["oracle_integrated_brier"].append(oracle.integrated_brier)
        figures["kaplan_meier_integrated_brier"].append(
            fold_scores(y[test], risk[test], baseline, y_train=y[train]).integrated_brier)
    figures = {key: float(np.mean(values)) for key, values in figures.items()}
    # the Kaplan-Meier split a survival run draws, made by the true risk: each outer fold cut at its training
    # folds' median, the log-rank test over every held-out patient
    held_out = np.isin(assignment, outer)
    cut = np.array([np.median(risk[assignment != fold]) for fold in assignment])
    figures["oracle_logrank_p"] = kaplan_meier_split(y["time"][held_out], y["event"][held_out], risk[held_out],
                                                     cut[held_out]).p_value
    return figures


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=(*TASKS, "on-run"))
    parser.add_argument("--out", required=True, help="the cohort's folder (its facts JSON beside it)")
    parser.add_argument("--patients", type=int, default=240)
    parser.add_argument("--features", type=int, default=32, help="features a patch (default 32)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-share", type=float, default=MAX_SHARE,
                        help=f"the largest witness share a patient is drawn with (default {MAX_SHARE})")
    parser.add_argument("--censored", type=float, default=0.4, help="survival: share censored (default 0.4)")
    parser.add_argument("--shape", type=float, default=1.0, help="survival: Weibull shape (default 1, exponential)")
    parser.add_argument("--log-hazard-ratio", type=float, default=2.0,
                        help="survival: log-hazard at --max-share over share 0 (default 2)")
    parser.add_argument("--noise", type=float, default=5.0,
                        help="regression: the target's noise in percentage points (default 5)")
    parser.add_argument("--folds", metavar="FOLDS_JSON", help="on-run: the run's folds.json")
    parser.add_argument("--outer", type=int, nargs="+",
                        help="on-run: the outer folds (default every fold: nested; give 0 for a hold-out run)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.what == "on-run":
        if not args.folds:
            parser.error("on-run needs --folds FOLDS_JSON")
        from automil.evaluation.folds_file import read_fold_file

        outer = args.outer or list(range(read_fold_file(args.folds).n_folds))
        for key, value in on_run(out, Path(args.folds), outer).items():
            print(f"{key}: {value:.4g}" if isinstance(value, float) else f"{key}: {value}")
        return
    common = {"n_patients": args.patients, "n_features": args.features, "seed": args.seed, "max_share": args.max_share}
    if args.what == "survival":
        facts = write_cohort("survival", out, **common, log_hazard_ratio=args.log_hazard_ratio, shape=args.shape,
                             censored=args.censored)
        figure = f"oracle C {facts['oracle_concordance']:.4f}, {facts['censored_share']:.1%} censored"
    else:
        facts = write_cohort("regression", out, **common, noise=args.noise)
        figure = f"oracle R2 {facts['oracle_r2']:.4f}"
    print(f"{facts['n_bags']} slides of {facts['n_patients']} patients, {facts['n_instances']} patches in {out}; "
          f"labels {out / OUTCOME_LABELS_FILE}; {figure}; facts {facts_path(out)}")


if __name__ == "__main__":
    sys.exit(main())
