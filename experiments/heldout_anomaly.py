"""Why models trained on a generated cohort's tuning slides score below chance on its held-out slides: each
slide's statistics read once straight from its ``.h5`` file (float32, memory-mapped), then the candidate causes
measured from them without tuning anything.

    python experiments/heldout_anomaly.py stats COHORT [--cache FILE]
    python experiments/heldout_anomaly.py report COHORT [--folds FOLDS_JSON] [--seeds 0 1 2 ...] [--cache FILE]
    python experiments/heldout_anomaly.py product COHORT [--folds FOLDS_JSON] [--seeds ...] [--learners ...]
                                                         [--scratch DIR]
    python experiments/heldout_anomaly.py drawn COHORT [--cohorts 40] [--seeds ...]

COHORT is a folder ``experiments/large_cohort.py`` wrote (its facts JSON, with the witness direction, beside it).
``stats`` (one pass, a slide at a time) keeps per slide: its size, its mean, its slide-centred covariance and
its patches' projections on the generator's witness direction (the largest, the mean of the top 1% and 3%, the
mean), in ``--cache`` (default ``COHORT.anomaly.npz`` beside the folder: 4 bytes x features^2 a slide).
``report`` prints a markdown table, one row per hold-out: a run's (``--folds``, its ``folds.json``: outer fold
0, as ``hand_recipe.py --folds`` reads it) and fold 0 of the 4 case-grouped folds ``automil.bag_folds`` draws
for each of ``--seeds`` (seed 0 is the run's), then the seeds' mean and SD; the held-out AUC of
- a slide's size, and its mean projection on the witness direction (its case's offset there, plus the
  witnesses' share of the shift);
- the oracle (the largest projection on the direction) and the slide-centred oracle (the largest minus the mean);
- two mean-pooled models fitted on the tuning slides: the tuning class-mean difference of slide means as a
  linear score, and a logistic regression (C = 1) on standardized slide means;
- the learnability check, fitted on the tuning slides only: the top eigenvector of the difference between the
  tumour and the normal slides' mean slide-centred covariances (the witnesses add variance along their own
  direction only), its |cosine| with the true direction, its sign chosen on the tuning slides, each slide
  scored by its largest and its top-1% mean slide-centred projection (a second pass over the slides);
and with ``--folds`` the two mean-pooled models on the run's inner folds and on the hand recipe's validation
slides.
``product`` reads the cohort as ``automil tune`` reads it (``automil.load_bags`` into a mapped file under
``--scratch``) and fits each of ``--learners`` through the run's own fit path
(``automil.tune.workers.fits.fit_predict``: ``Standardized``, streamed test bags) on each hold-out's tuning
slides, printing its held-out AUC; for bag-stats on means with a logistic regression, also the same model
computed from the ``.h5`` slide means matched by name, and the rank correlation of the two (1 when the
product's slides, labels and predictions line up).
``drawn`` draws ``--cohorts`` fresh cohorts' slide means as ``large_cohort.py`` draws them (COHORT's facts:
slides, sizes, features, witness share) and prints where the class-mean difference model's held-out AUC,
averaged over a cohort's hold-outs (``--seeds``, default 0-19), centres from one cohort to the next.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

TRIDENT_SUBDIR = "20x_256px_0px_overlap/features_uni_v1"
TOP_SHARES = (0.01, 0.03)  # the top-k means kept per slide, as shares of its patches


def slide_files(cohort: Path) -> tuple[list[str], np.ndarray, np.ndarray, Path]:
    """The labels table's slides, whether each is tumour, their cases and the feature folder."""
    rows = list(csv.DictReader(open(cohort / "slides.csv")))
    names = [r["slide_id"] for r in rows]
    tumour = np.array([r["label"] == "tumor_tissue" for r in rows])
    cases = np.array([r["case_id"] for r in rows])
    return names, tumour, cases, cohort / TRIDENT_SUBDIR


def mapped_features(path: Path) -> np.ndarray:
    """A slide's ``features`` dataset as a read-only float32 memory map (TRIDENT writes it contiguous)."""
    import h5py

    with h5py.File(path, "r") as f:
        data = f["features"]
        offset, shape, dtype = data.id.get_offset(), data.shape, data.dtype
    if offset is None:
        raise SystemExit(f"{path}: 'features' is chunked or compressed; this script maps contiguous datasets only")
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape)


def top_mean(values: np.ndarray, share: float) -> float:
    k = max(1, round(share * len(values)))
    return float(np.partition(values, len(values) - k)[-k:].mean())


def collect_stats(cohort: Path, cache: Path) -> None:
    """One pass: each slide's size, mean, centred covariance and projections on the true direction."""
    names, tumour, cases, folder = slide_files(cohort)
    direction = np.asarray(json.loads(cohort.with_suffix(".json").read_text())["direction"], dtype=np.float32)
    d = len(direction)
    sizes = np.zeros(len(names), dtype=np.int64)
    means = np.zeros((len(names), d))
    covs = np.zeros((len(names), d, d), dtype=np.float32)
    projections = np.zeros((len(names), 2 + len(TOP_SHARES)))  # max, top shares, mean
    start = time.perf_counter()
    for i, name in enumerate(names):
        x = np.array(mapped_features(folder / f"{name}.h5"), dtype=np.float32)
        sizes[i] = len(x)
        mean = x.mean(axis=0, dtype=np.float64)
        means[i] = mean
        p = x @ direction
        projections[i] = [p.max(), *(top_mean(p, s) for s in TOP_SHARES), p.mean()]
        x -= mean.astype(np.float32)
        covs[i] = (x.T @ x) / len(x)
        if (i + 1) % 25 == 0:
            print(f"{i + 1}/{len(names)} slides in {time.perf_counter() - start:.0f} s", flush=True)
    np.savez(cache, names=np.array(names), tumour=tumour, cases=cases, sizes=sizes, means=means, covs=covs,
             projections=projections, direction=direction)


def load_stats(cache: Path) -> dict:
    if not cache.exists():
        raise SystemExit(f"{cache}: no statistics; run `python experiments/heldout_anomaly.py stats COHORT` first")
    with np.load(cache) as stats:
        return {key: stats[key] for key in stats.files}


def run_split(stats: dict, folds_file: Path) -> np.ndarray:
    """Whether each slide is in the run's outer fold 0 (its hold-out)."""
    from automil.evaluation.folds_file import read_fold_file

    held = set(read_fold_file(folds_file).tuning[0])
    return np.array([name in held for name in stats["names"]])


def seed_split(stats: dict, seed: int) -> np.ndarray:
    """Fold 0 of the 4 case-grouped, stratified folds ``automil.bag_folds`` draws with ``seed``."""
    import automil

    return automil.bag_folds(stats["tumour"], 4, seed, stats["cases"]) == 0


def auc(positive: np.ndarray, scores: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(positive, scores))


def witness_direction(stats: dict, train: np.ndarray) -> np.ndarray:
    """The top eigenvector of (mean tumour - mean normal) slide-centred covariance over the ``train`` slides:
    the direction in which the tuning tumour slides vary more than the normal ones (the witnesses' own)."""
    tumour, covs = stats["tumour"], stats["covs"]
    difference = (covs[train & tumour].mean(axis=0, dtype=np.float64)
                  - covs[train & ~tumour].mean(axis=0, dtype=np.float64))
    return np.linalg.eigh(difference)[1][:, -1]


def centred_extremes(cohort: Path, stats: dict, directions: np.ndarray) -> np.ndarray:
    """Second pass: per slide and direction, the largest and the top-1% mean of the slide-centred projections
    on the direction, then on its opposite (slides x directions x 4)."""
    folder, n = cohort / TRIDENT_SUBDIR, directions.shape[1]
    w = np.concatenate((directions, -directions), axis=1).astype(np.float32)
    out = np.zeros((len(stats["names"]), n, 4))
    for i, name in enumerate(stats["names"]):
        p = np.asarray(mapped_features(folder / f"{name}.h5")) @ w - (stats["means"][i] @ w)
        k = max(1, round(TOP_SHARES[0] * len(p)))
        largest, top = p.max(axis=0), np.partition(p, len(p) - k, axis=0)[-k:].mean(axis=0)
        out[i] = np.stack((largest[:n], top[:n], largest[n:], top[n:]), axis=1)
    return out


def mean_models(stats: dict, train: np.ndarray) -> dict:
    """Held-out scores of two mean-pooled linear models fitted on the ``train`` slides: the tuning class-mean
    difference of slide means, and a logistic regression on standardized slide means (C = 1)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    means, tumour = stats["means"], stats["tumour"]
    difference = means[train & tumour].mean(axis=0) - means[train & ~tumour].mean(axis=0)
    scaler = StandardScaler().fit(means[train])
    model = LogisticRegression(max_iter=5000).fit(scaler.transform(means[train]), tumour[train])
    return {"class-mean difference": means @ difference,
            "logistic on slide means": model.decision_function(scaler.transform(means))}


COLUMNS = ("held-out slides (tumour) / cases", "size", "mean on d", "oracle", "centred oracle",
           "class-mean difference", "logistic on slide means", "cos(learned, d)", "learned: largest",
           "learned: top 1%")


def report(cohort: Path, stats: dict, folds_file: Path | None, seeds: list[int]) -> None:
    """The table of held-out figures, one row per hold-out, and the mean and SD over the seeds' hold-outs."""
    splits = ([("run", run_split(stats, folds_file))] if folds_file else []) + [
        (f"seed {seed}", seed_split(stats, seed)) for seed in seeds]
    directions = np.stack([witness_direction(stats, ~held) for _, held in splits], axis=1)
    extremes = centred_extremes(cohort, stats, directions)
    tumour, cases, projections, true = stats["tumour"], stats["cases"], stats["projections"], stats["direction"]
    print("| hold-out | " + " | ".join(COLUMNS) + " |\n|" + " --- |" * (len(COLUMNS) + 1))
    figures = []
    for s, (label, held) in enumerate(splits):
        train = ~held
        row = [auc(tumour[held], stats["sizes"][held]), auc(tumour[held], projections[held, -1]),
               auc(tumour[held], projections[held, 0]), auc(tumour[held], projections[held, 0] - projections[held, -1])]
        row += [auc(tumour[held], scores[held]) for scores in mean_models(stats, train).values()]
        # the learned direction's sign: the one whose largest projection ranks the tuning slides better
        plus, minus = extremes[:, s, :2], extremes[:, s, 2:]
        chosen = plus if auc(tumour[train], plus[train, 0]) >= auc(tumour[train], minus[train, 0]) else minus
        row += [abs(float(directions[:, s] @ true)), auc(tumour[held], chosen[held, 0]),
                auc(tumour[held], chosen[held, 1])]
        figures.append(row)
        counts = f"{held.sum()} ({(held & tumour).sum()}) / {len(set(cases[held]))}"
        print(f"| {label} | {counts} | " + " | ".join(f"{v:.3f}" for v in row) + " |")
    seeded = np.array(figures[1:] if folds_file else figures)
    if len(seeded) > 1:
        print("| seeds' mean (SD) | - | " + " | ".join(f"{m:.3f} ({sd:.3f})" for m, sd in
                                                   zip(seeded.mean(axis=0), seeded.std(axis=0, ddof=1))) + " |")


def run_inner_folds(stats: dict, folds_file: Path) -> None:
    """The mean-pooled models on the run's inner folds (its tuning folds 1-3, each scored by a fit on the other
    two) and on the hand recipe's validation slides (``hand_recipe.py --folds``: fold 0 of 5 case folds of the
    tuning slides, trained on the other four): what a tuning or validation figure of a model that fits case
    offsets looks like on these slides."""
    import automil
    from automil.evaluation.folds_file import read_fold_file

    order = {name: i for i, name in enumerate(stats["names"])}
    fold = np.full(len(order), -1)
    for k, names in enumerate(read_fold_file(folds_file).tuning):
        fold[[order[name] for name in names]] = k
    tumour, lines = stats["tumour"], []
    for k in (1, 2, 3):
        scored, train = fold == k, (fold > 0) & (fold != k)
        lines.append(" / ".join(f"{auc(tumour[scored], s[scored]):.3f}" for s in mean_models(stats, train).values()))
    training = np.flatnonzero(fold != 0)
    inner = automil.bag_folds(tumour[training], 5, 0, stats["cases"][training])
    train, validation = np.isin(np.arange(len(fold)), training[inner != 0]), training[inner == 0]
    recipe = " / ".join(f"{auc(tumour[validation], s[validation]):.3f}" for s in mean_models(stats, train).values())
    print(f"\nclass-mean difference / logistic on slide means, the run's inner folds 1-3: {', '.join(lines)}; "
          f"the hand recipe's {len(validation)} validation slides: {recipe}")


PRODUCT_LEARNERS = {  # learner, parameters: what runs through the product's fit path
    "bag-stats mean + logistic": ("bag-stats", {"statistics": ("mean",), "classifier": "logistic-regression",
                                                "C": 1.0}),
    "bag-stats defaults": ("bag-stats", {}),
    "mifv defaults": ("mifv", {}),
    "MI-Net centred": ("MI-Net", {"centre_bags": True, "pooling": "max", "max_instances": 512, "epochs": 20}),
}


def product_check(cohort: Path, stats: dict, splits: list, scratch: Path | None, learners: list[str]) -> None:
    """The cohort read as ``automil tune`` reads it (``automil.load_bags`` into a mapped file under
    ``scratch``), each learner fitted on the tuning slides and predicted on the held-out ones by the run's own
    fit path (``automil.tune.workers.fits.fit_predict``); its per-slide scores compared with the same model
    computed here from the slide means read straight from the ``.h5`` files, slide by name."""
    import tempfile

    from scipy.stats import spearmanr

    import automil
    from automil.data.instance_matrix import writing_instances
    from automil.tune.workers.fits import fit_predict

    with tempfile.TemporaryDirectory(prefix="heldout-anomaly-", dir=scratch) as folder:
        with writing_instances(Path(folder) / "instances.npy"):
            bags = automil.load_bags(str(cohort), labels=str(cohort / "slides.csv"), groups="case_id")
        order = {name: i for i, name in enumerate(stats["names"])}
        rows = np.array([order[name] for name in bags.names])  # the stats' row of each bag
        if not np.array_equal(bags.y == "tumor_tissue", stats["tumour"][rows]):
            raise SystemExit("the product's labels differ from the labels table's, slide by slide")
        for split, held in splits:
            by_hand = mean_models(stats, ~held)["logistic on slide means"][rows]
            train, test = np.flatnonzero(~held[rows]), np.flatnonzero(held[rows])
            positive = bags.y[test] == "tumor_tissue"
            for label in learners:
                learner, params = PRODUCT_LEARNERS[label]
                start = time.perf_counter()
                result = fit_predict(bags, learner, params, train, test, seed=0)
                line = (f"{split}: {label}: held-out AUC {auc(positive, result.scores):.3f} "
                        f"({time.perf_counter() - start:.0f} s)")
                if label == "bag-stats mean + logistic":
                    rho = spearmanr(result.scores, by_hand[test]).statistic
                    line += (f"; by hand from the .h5 slide means {auc(positive, by_hand[test]):.3f}, rank "
                             f"correlation of the two {rho:.4f}")
                print(line, flush=True)


def drawn_cohorts(facts: dict, cohorts: int, seeds: list[int]) -> np.ndarray:
    """Per cohort drawn as ``large_cohort.py`` draws its slides' means (the case sizes, labels and offsets of
    a fresh seed, each slide's noise mean of its drawn size, the witnesses' share of the shift on tumour slides),
    the class-mean difference model's held-out AUC averaged over the ``seeds``' hold-outs: where a cohort's
    figure for a model with no signal centres."""
    from large_cohort import case_sizes

    from automil_datasets.slides import CASE_SPREAD, WITNESS_SHIFT

    low, high = facts["patches"]
    centres = np.zeros(cohorts)
    for cohort in range(cohorts):
        rng = np.random.default_rng(1000 + cohort)
        direction = rng.standard_normal(facts["n_features"])
        direction /= np.linalg.norm(direction)
        sizes = case_sizes(rng, facts["slides"])
        labels = rng.permutation(np.arange(len(sizes)) < len(sizes) // 2)
        means, tumour, cases = [], [], []
        for case, (size, positive) in enumerate(zip(sizes, labels)):
            offset = CASE_SPREAD * rng.standard_normal(facts["n_features"])
            for _ in range(size):
                noise = rng.standard_normal(facts["n_features"]) / np.sqrt(rng.integers(low, high + 1))
                means.append(offset + noise + positive * facts["witness_share"] * WITNESS_SHIFT * direction)
                tumour.append(positive)
                cases.append(case)
        stats = {"means": np.array(means), "tumour": np.array(tumour), "cases": np.array(cases)}
        figures = []
        for seed in seeds:
            held = seed_split(stats, seed)
            scores = mean_models(stats, ~held)["class-mean difference"]
            figures.append(auc(stats["tumour"][held], scores[held]))
        centres[cohort] = np.mean(figures)
    return centres


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("stats", "report", "product", "drawn"))
    parser.add_argument("cohort", help="a folder experiments/large_cohort.py wrote (its facts JSON beside it)")
    parser.add_argument("--cache", help="the statistics file (default COHORT.anomaly.npz beside the folder)")
    parser.add_argument("--folds", help="a run's folds.json: its outer fold 0 is a hold-out of the report")
    parser.add_argument("--seeds", type=int, nargs="*", default=[], help="case-grouped hold-outs drawn with these")
    parser.add_argument("--learners", nargs="*", default=list(PRODUCT_LEARNERS), choices=list(PRODUCT_LEARNERS),
                        help="product: the models fitted through the product's path")
    parser.add_argument("--cohorts", type=int, default=40, help="drawn: cohorts to draw (default 40)")
    parser.add_argument("--scratch", help="product: where the run's mapped file is written (default: a temporary "
                                          "folder)")
    args = parser.parse_args(argv)
    cohort = Path(args.cohort)
    cache = Path(args.cache) if args.cache else cohort.with_suffix(".anomaly.npz")
    if args.command == "stats":
        collect_stats(cohort, cache)
        return
    if args.command == "drawn":
        facts = json.loads(cohort.with_suffix(".json").read_text())
        centres = drawn_cohorts(facts, args.cohorts, args.seeds or list(range(20)))
        print(f"{args.cohorts} cohorts drawn as {cohort.name} (witness share {facts['witness_share']:g}): "
              f"the class-mean difference model's held-out AUC, mean over each cohort's hold-outs: "
              f"mean {centres.mean():.3f}, SD {centres.std(ddof=1):.3f}, {centres.min():.3f} to "
              f"{centres.max():.3f}; {(centres <= 0.4).mean():.0%} of cohorts at most 0.40")
        return
    stats = load_stats(cache)
    if args.command == "report":
        if not args.folds and not args.seeds:
            parser.error("report needs --folds or --seeds")
        report(cohort, stats, Path(args.folds) if args.folds else None, args.seeds)
        if args.folds:
            run_inner_folds(stats, Path(args.folds))
    else:
        if not args.folds and not args.seeds:
            parser.error("product needs --folds or --seeds")
        splits = ([("run", run_split(stats, Path(args.folds)))] if args.folds else []) + [
            (f"seed {seed}", seed_split(stats, seed)) for seed in args.seeds]
        product_check(cohort, stats, splits, Path(args.scratch) if args.scratch else None, args.learners)


if __name__ == "__main__":
    sys.exit(main())
