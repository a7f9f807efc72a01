"""The portfolio's benchmark matrix: MIL tasks x learner configurations, and the portfolio chosen on it.

    python experiments/portfolio.py build [--storage journal:portfolio.journal]    # matrix, then select, then regret
    python experiments/portfolio.py matrix [--storage journal:portfolio.journal] [--points 1] [--fit-timeout 30]
                                     [--shard 0/1] [--task NAME ...] [--cohort-root DIR]
    python experiments/portfolio.py select [--storage journal:portfolio.journal]
                                           [--out automil/tune/portfolio/portfolio.json]
    python experiments/portfolio.py regret [--storage journal:portfolio.journal]

``matrix`` scores every configuration (each built-in learner's defaults, each network's defaults on bags centred on
their own mean, then ``--points`` points of its search space drawn once with a fixed seed) on every task:
generated MIL tasks that span the regimes (bags, instances per bag, features, witness share, presence / threshold /
collective concepts, class balance; ``TASKS``), generated slide cohorts (patients of several slides; ``COHORTS``,
cross-validated over patients) and the classic binary sets of the data directory (``AUTOMIL_DATA_DIR``).
``--cohort-root DIR`` scores instead the "cohorts" regime: the large cohorts ``experiments/cohort_regime.py``
wrote under DIR, by that script's configurations (what a slide of thousands of patches affords). A cell
is stratified 3-fold CV over bags
(balanced accuracy, ROC AUC, fit seconds), every fit in a killable worker at ``--fit-timeout``. Cells are
stored one trial each in an Optuna journal (a study per task), so the command resumes where it stopped and
several shards (``--shard i/n``) share the work. The defaults of every learner on every task come first, the
drawn points after, so a matrix cut short is still complete in the defaults.

``select`` chooses the portfolio by greedy forward selection per regime (:mod:`automil.tune.portfolio.selection`)
(on balanced accuracy; the cohorts regime on ROC AUC, ``METRIC_OF``) and writes it as the JSON automil ships
(a regime without tasks in the matrix kept as the file has it); ``regret`` prints its leave-one-task-out regret
against each learner's defaults and against running every learner's defaults.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from automil import Bags, bag_folds, fold_splits
from automil.tune.portfolio.members import estimator_params

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "automil" / "tune" / "portfolio" / "portfolio.json"
CLASSIC = ("musk1", "musk2", "elephant", "fox", "tiger")
FOLDS = 3
BUILT_IN = ("svm", "pdmisvm", "forests", "embedding", "neighbors", "deep")  # the plugins in plugins/
# The space's data facts when points are drawn (a space may read them: a bound from n_features, a refusal
# from n_instances); the points are then checked against each task's own facts.
DRAW_FACTS = {"n_features": 64, "n_instances": 20_000, "n_classes": 2}
# The metric a regime's portfolio is chosen on: a cohort is reported by its ROC AUC, the others by BACC.
METRIC = "balanced_accuracy"
METRIC_OF = {"cohorts": "roc_auc"}


@dataclass(frozen=True)
class MilTask:
    """A generated binary MIL task; equal fields give equal bags.

    Instances are standard normal in ``n_features`` dimensions, plus a nuisance shift per bag (sd 0.5).
    Witnesses are shifted by ``shift`` along a hidden unit direction (``collective``: along one of two).
    ``presence``: a positive bag holds ``witness_share`` of its instances as witnesses (at least one), a
    negative bag none. ``threshold``: a positive bag holds at least ``t = max(2, witness_share * size)``
    witnesses, a negative bag fewer than ``t``. ``collective``: a positive bag holds witnesses of both
    concepts, a negative bag of one at most.
    """

    concept: str
    n_bags: int
    bag_size: int
    n_features: int
    witness_share: float
    positive_share: float = 0.5
    seed: int = 0
    shift: float = 3.0

    @property
    def name(self) -> str:
        return (f"{self.concept}-b{self.n_bags}-i{self.bag_size}-d{self.n_features}-w{self.witness_share:g}"
                f"-p{self.positive_share:g}-x{self.shift:g}-s{self.seed}")

    def bags(self) -> Bags:
        rng = np.random.default_rng([self.seed, zlib.crc32(self.name.encode())])
        directions = np.linalg.qr(rng.standard_normal((self.n_features, 2)))[0].T.astype(np.float32)
        y = rng.permutation(np.arange(self.n_bags) < round(self.positive_share * self.n_bags)).astype(np.int64)
        sizes = rng.integers(max(2, self.bag_size // 2), self.bag_size * 3 // 2 + 1, self.n_bags)
        offsets = np.concatenate(([0], np.cumsum(sizes)))
        X = rng.standard_normal((int(offsets[-1]), self.n_features), dtype=np.float32)
        for b, size in enumerate(sizes):
            rows = slice(offsets[b], offsets[b + 1])
            X[rows] += rng.normal(0.0, 0.5, self.n_features).astype(np.float32)
            for concept, count in self._witnesses(rng, bool(y[b]), int(size)):
                chosen = offsets[b] + rng.choice(size, count, replace=False)
                X[chosen] += self.shift * directions[concept]
        return Bags(X, offsets, y)

    def _witnesses(self, rng, positive: bool, size: int) -> list[tuple[int, int]]:
        """(concept, how many) witnesses of one bag."""
        k = min(size, max(1, round(self.witness_share * size)))
        if self.concept == "presence":
            return [(0, k)] if positive else []
        if self.concept == "threshold":
            t = min(size, max(2, k))
            return [(0, int(rng.integers(t, min(size, 2 * t) + 1)))] if positive else [(0, int(rng.integers(0, t)))]
        half = max(1, min(k, size // 2))  # collective: both concepts in a positive bag
        if positive:
            return [(0, half), (1, half)]
        return [(int(rng.integers(0, 2)), half)] if rng.random() < 2 / 3 else []


def generated_tasks() -> list[MilTask]:
    """The generated tasks of the matrix: a fixed, seeded draw over the regimes, bounded to what 2 cores
    score in about an hour (at most 20,000 instances and 2 million instance values a task), and two tasks of
    the kind MIL exists for (2-3% witnesses in bags of 60 to 100)."""
    rng = np.random.default_rng(2026)
    tasks = []
    for concept in ("presence", "presence", "threshold", "collective"):
        for bag_size in (8, 30, 120, 400):
            n_bags = int(rng.choice((60, 150, 400, 1000)))
            n_features = int(rng.choice((16, 64, 256)))
            share = float(rng.choice((0.02, 0.1, 0.4)))
            positive = float(rng.choice((0.5, 0.5, 0.25)))
            n_bags = min(n_bags, 20_000 // bag_size, 2_000_000 // (bag_size * n_features))
            tasks.append(MilTask(concept, max(n_bags, 40), bag_size, n_features, share, positive, seed=len(tasks)))
    tasks += [MilTask("presence", 300, 60, 64, 0.03, seed=len(tasks), shift=4.0),
              MilTask("presence", 200, 100, 32, 0.02, seed=len(tasks) + 1, shift=4.5)]
    return tasks


def cohort_tasks() -> list:
    """Generated slide cohorts (``experiments/cohorts.py``): patients of 2 or 3 slides, every patch of a
    patient shifted by the patient's own offset, witness shares 2% to 10%; seeds no reported cohort uses,
    at most 20,000 instances each. Their cells cross-validate over patients."""
    from cohorts import Cohort

    return [Cohort(150, 0.05, seed=10), Cohort(150, 0.02, seed=11), Cohort(150, 0.1, n_features=32, seed=12),
            Cohort(120, 0.03, patches=(100, 200), n_features=96, seed=13)]


TASKS = {t.name: t for t in generated_tasks()}
COHORTS = {c.name: c for c in cohort_tasks()}


def task_bags(name: str, cohort_root: Path | None = None) -> Bags:
    from automil import load_bags

    if cohort_root is not None:
        import cohort_regime

        return cohort_regime.load(name, cohort_root)
    if name in TASKS:
        return TASKS[name].bags()
    if name in COHORTS:
        from cohorts import write_cohort

        with tempfile.TemporaryDirectory(prefix="automil-portfolio-") as scratch:
            features, facts = write_cohort(COHORTS[name], Path(scratch))
            return load_bags(features, labels=str(Path(scratch) / facts["labels"]), groups=facts["groups"])
    return load_bags(name)


def configurations(points: int) -> list[dict]:
    """Every built-in learner's defaults, then ``points`` points of its space each (drawn with a fixed seed
    per learner and point): ``{"config", "learner", "params"}`` with Optuna's parameter names."""
    import optuna

    from automil import plugins

    specs = [s for s in sorted(plugins.learners().values(), key=lambda s: s.name.lower())
             if s.plugin in BUILT_IN]
    configs = [{"config": f"{s.name}:default", "learner": s.name, "params": dict(s.first_trial)} for s in specs]
    # the networks' defaults on bags centred on their own mean: the choice the defaults leave off
    configs += [{"config": f"{s.name}:centred", "learner": s.name, "params": {**s.first_trial, "centre_bags": True}}
                for s in specs if "centre_bags" in s.first_trial]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for point in range(1, points + 1):
        for spec in specs:
            for attempt in range(20):
                study = optuna.create_study(sampler=optuna.samplers.RandomSampler(
                    seed=zlib.crc32(f"{spec.name}:{point}:{attempt}".encode())))
                trial = study.ask()
                for key, value in DRAW_FACTS.items():
                    trial.set_user_attr(key, value)
                try:
                    spec.search_space(trial)
                except optuna.TrialPruned:
                    continue
                if trial.params and trial.params != spec.first_trial:
                    configs.append({"config": f"{spec.name}:p{point}", "learner": spec.name,
                                    "params": trial.params})
                break
    return configs


def score_cell(worker, bags: Bags, folds, config: dict, fit_timeout: float) -> dict:
    """One cell: the configuration's 3-fold CV on the task; what the matrix stores of it."""
    import optuna

    from automil import plugins
    from automil.evaluation.metrics import fold_scores
    from automil.tune.workers.fits import fit_predict, import_for
    from automil.tune.workers.isolation import FitError, FitMemoryExceeded, FitTimeout, WorkerDied

    spec = plugins.get_learner(config["learner"])
    try:
        params = estimator_params(spec, config["params"], bags)
    except optuna.TrialPruned as refused:
        return {"status": "refused", "error": str(refused)}
    import_for(worker, (spec.name,))
    bacc, auc, seconds = [], [], []
    for train, test in folds:
        try:
            out = worker.call(fit_predict, spec.name, params, train, test, 0, timeout=fit_timeout)
        except FitTimeout:
            return {"status": "timeout", "seconds": fit_timeout * len(folds)}
        except (FitError, FitMemoryExceeded, WorkerDied) as error:
            return {"status": "failed", "error": str(error)[:300]}
        scores = fold_scores(bags.y[test], out.y_pred, out.scores, bags.classes)
        bacc.append(scores.balanced_accuracy)
        auc.append(scores.roc_auc)
        seconds.append(out.fit_seconds + out.predict_seconds)
    return {"status": "ok", "balanced_accuracy": float(np.mean(bacc)), "fold_balanced_accuracy": bacc,
            "roc_auc": None if None in auc else float(np.mean(auc)), "seconds": float(np.sum(seconds))}


def run_matrix(args):
    import optuna

    from automil.tune.backend.optuna_storage import open_storage
    from automil.tune.options import TuneOptions
    from automil.tune.workers.fits import fit_worker

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_storage(args.storage)
    if args.cohort_root:
        import cohort_regime

        configs, names = cohort_regime.configurations(), args.task or list(cohort_regime.BY_NAME)
    else:
        configs, names = configurations(args.points), args.task or [*CLASSIC, *TASKS, *COHORTS]
    shard, shards = (int(x) for x in args.shard.split("/"))
    names = [n for i, n in enumerate(names) if i % shards == shard]
    worker = fit_worker(TuneOptions(jobs=2))  # one thread: a shard a core
    try:
        # the defaults on every task first, the drawn points after
        for rank in sorted({c["config"].split(":")[1] for c in configs}, key=lambda r: (r != "default", r)):
            for name in names:
                _score_task(storage, worker, name, [c for c in configs if c["config"].endswith(f":{rank}")], args)
    finally:
        worker.close()


def _score_task(storage, worker, name: str, configs: list[dict], args):
    import optuna

    study = optuna.create_study(storage=storage, study_name=f"portfolio/{name}", load_if_exists=True)
    done = {t.user_attrs.get("config") for t in study.get_trials(deepcopy=False)}
    todo = [c for c in configs if c["config"] not in done]
    if not todo:
        return
    try:
        bags = task_bags(name, args.cohort_root)
    except Exception as error:  # noqa: BLE001 - a classic set missing from the data directory
        print(f"{name}: skipped ({error})", flush=True)
        return
    if "meta_features" not in study.user_attrs:
        from automil.tune.portfolio.members import grouped
        from automil.tune.studies.meta_features import meta_features

        study.set_user_attr("meta_features", {**meta_features(bags).to_dict(), "grouped": grouped(bags)})
    worker.set_data(bags)
    folds = fold_splits(bag_folds(bags.y, FOLDS, 0, bags.groups))  # a patient's slides on one side
    for config in todo:
        start = time.time()
        cell = score_cell(worker, bags, folds, config, args.fit_timeout)
        value = cell.get("balanced_accuracy")
        trial = optuna.trial.create_trial(
            state=optuna.trial.TrialState.COMPLETE if value is not None else optuna.trial.TrialState.FAIL,
            value=value, user_attrs={**config, **cell})
        study.add_trial(trial)
        shown = "-" if value is None else f"{value:.3f}"
        print(f"{name:45s} {config['config']:26s} {cell['status']:8s} {shown:>6s} {time.time() - start:6.1f} s",
              flush=True)


def read_matrix(storage_url: str):
    """The stored matrix: task names, their meta-features, configurations, and the scores (by metric: BACC and
    ROC AUC) and seconds (NaN where a cell is missing or failed)."""
    import optuna

    from automil.tune.backend.optuna_storage import open_storage

    storage = open_storage(storage_url)
    summaries = [s for s in optuna.get_all_study_summaries(storage, include_best_trial=False)
                 if s.study_name.startswith("portfolio/")]
    cells, configs, features = {}, {}, {}
    for summary in sorted(summaries, key=lambda s: s.study_name):
        task = summary.study_name.removeprefix("portfolio/")
        features[task] = summary.user_attrs.get("meta_features")
        for trial in optuna.load_study(study_name=summary.study_name, storage=storage).get_trials(deepcopy=False):
            attrs = trial.user_attrs
            configs[attrs["config"]] = {"learner": attrs["learner"], "params": attrs["params"]}
            cells[task, attrs["config"]] = (attrs.get("balanced_accuracy"), attrs.get("roc_auc"), attrs.get("seconds"))
    tasks = [t for t in features if features[t] is not None]
    names = sorted(configs)
    table = np.array([[[np.nan if v is None else v for v in cells.get((task, config), (None,) * 3)]
                       for config in names] for task in tasks], dtype=float).reshape(len(tasks), len(names), 3)
    scores = {METRIC: table[..., 0], "roc_auc": table[..., 1]}
    return tasks, [features[t] for t in tasks], names, [configs[n] for n in names], scores, table[..., 2]


def run_select(args):
    from automil.tune.portfolio.members import REGIMES, regime_of
    from automil.tune.portfolio.selection import greedy_portfolio

    tasks, features, names, configs, scores, seconds = read_matrix(args.storage)
    out = Path(args.out)
    earlier = {r["name"]: r for r in json.loads(out.read_text())["regimes"]} if out.exists() else {}
    regimes = []
    for regime in REGIMES:
        rows = [i for i, f in enumerate(features) if regime_of(f) == regime.name]
        if not rows and regime.name in earlier:  # a matrix of some regimes' tasks only: the others as they were
            regimes.append(earlier[regime.name])
            print(f"{regime.name}: no task in the matrix, kept as {out.name} has it")
            continue
        metric = METRIC_OF.get(regime.name, METRIC)
        chosen = greedy_portfolio(scores[metric][rows], seconds[rows], args.size)
        regimes.append({**asdict(regime), **({"metric": metric} if metric != METRIC else {}),
                        "configurations": len(names), "tasks": [tasks[i] for i in rows],
                        "members": [{"learner": configs[j]["learner"], "params": configs[j]["params"],
                                     "config": names[j]} for j in chosen]})
    shipped = {"metric": METRIC, "built_by": "python experiments/portfolio.py matrix && "
               "python experiments/portfolio.py select", "regimes": regimes}
    out.write_text(json.dumps(shipped, indent=1) + "\n")
    for regime in regimes:
        print(f"{regime['name']} ({len(regime['tasks'])} tasks): "
              + ", ".join(m["config"] for m in regime["members"]))


def run_regret(args):
    from automil.tune.portfolio.members import REGIMES, regime_of
    from automil.tune.portfolio.selection import leave_one_task_out

    tasks, features, names, configs, scores, seconds = read_matrix(args.storage)
    defaults = {n.removesuffix(":default"): j for j, n in enumerate(names) if n.endswith(":default")}
    print(f"{len(tasks)} tasks x {len(names)} configurations, "
          f"{np.isfinite(scores[METRIC]).sum()} cells scored, {np.isnan(scores[METRIC]).sum()} missing or failed")
    for regime in REGIMES:
        rows = [i for i, f in enumerate(features) if regime_of(f) == regime.name]
        if len(rows) < 2:
            continue
        metric = METRIC_OF.get(regime.name, METRIC)
        table = leave_one_task_out(scores[metric][rows], seconds[rows], args.size, defaults)
        print(f"\n{regime.name}: {len(rows)} tasks, leave-one-task-out regret ({metric} points below the best "
              "configuration of the held-out task; mean over tasks) and seconds of the members' 3-fold CV")
        for label, (regret, secs) in table.items():
            print(f"  {label:32s} {100 * regret:6.1f}  {secs:9.0f} s")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("build", "matrix", "select", "regret"):
        command = commands.add_parser(name)
        command.add_argument("--storage", default="journal:portfolio.journal")
        command.add_argument("--size", type=int, default=8, help="most members a regime's portfolio holds")
    for name in ("build", "matrix"):
        commands.choices[name].add_argument("--points", type=int, default=1)
        commands.choices[name].add_argument("--fit-timeout", type=float, default=15.0)
        commands.choices[name].add_argument("--shard", default="0/1")
        commands.choices[name].add_argument("--task", action="append")
        commands.choices[name].add_argument("--cohort-root", type=Path,
                                            help="score the cohorts regime on experiments/cohort_regime.py's cohorts")
    for name in ("build", "select"):
        commands.choices[name].add_argument("--out", default=str(SHIPPED))
    args = parser.parse_args(argv)
    steps = {"matrix": [run_matrix], "select": [run_select], "regret": [run_regret],
             "build": [run_matrix, run_select, run_regret]}[args.command]
    for step in steps:
        step(args)


if __name__ == "__main__":
    sys.exit(main())
