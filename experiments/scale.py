"""automil at scale: pathology-like bag sets at 10^4, 10^5 and 10^6 instances, slide cohorts of 100 to 1,000
slides at several witness shares, and the main job run on them beside each learner's defaults and the oracle.

A set has bags of 50 to 500 instances drawn from a standard normal in d dimensions (64 to 512), or, with
``--bags``, that many bags of about instances / bags each (uniform from half to one and a half times that):
more and smaller bags. Every bag gets its own nuisance shift (normal, sd 0.5 per feature); 1 to 8% of the
instances of a positive bag (at least one) are witnesses, shifted by 3 along one hidden unit direction.
Labels are balanced. The oracle is the best threshold on each bag's largest projection on that direction
(max pooling that knows the direction), scored as balanced accuracy on all bags: the ceiling of a learner
that sees the bags as they are (one that centres each bag on its own mean drops the bag's shift along the
direction, and can pass it).

    python experiments/scale.py generate [--sizes 1e4 1e5 1e6] [--bags N ...] [--features 64] [--layout npz|folder]
                                   [--out DIR]
    python experiments/scale.py generate --sizes 1e5 1e6 --bags 1000 4000    # the sets of more and smaller bags
    python experiments/scale.py run DATA [--timeout 600] [--workdir DIR]
                                    [more automil tune options, e.g. --learner bag-stats]
    python experiments/scale.py read DATA [--labels CSV --groups case_id]
    python experiments/scale.py cohort [--slides 100 300 1000] [--witness-shares 0.01 0.03 0.1] [--patches 60 180]
                                 [--features 64] [--layout trident|clam] [--seed 0] [--out DIR]
    python experiments/scale.py compare DATA [--timeout 600] [--fit-timeout 300] [--skip LEARNER ...] [--workdir DIR]
                                  [more automil tune options, e.g. --metric roc_auc --learner mifv]

``generate`` writes each set (``scale-<n>-d<d>.npz``, ``scale-<n>-d<d>-b<bags>.npz`` with ``--bags``, or a
folder of ``.npy`` files with ``labels.csv``) and a ``.json`` of its facts beside it, and prints sizes and
the oracle. ``run`` runs ``automil tune --dataset DATA --timeout T --json`` in a fresh working directory and
prints the wall time, the peak memory summed over the run's processes (read from /proc), one line per
learner (its status, figure, the rung of the bag ladder it ended on where the row carries one, and the
seconds of the budget it used), the procedure's own figure (the ``automil`` row) and the best row's
against the oracle, the chosen model, and the seconds used by learners that ended with no figure, as a share
of the seconds the run's tuning processes (``--jobs``) had over the budget.

``read`` reads a set as a run does (into the run's shared instance file) and prints the seconds and the peak
private and proportional memory of reading it.

``cohort`` writes one slide cohort per number of slides and witness share (``experiments/cohorts.py``: a TRIDENT or
CLAM folder of cases of 2 or 3 slides, string labels, the cases as groups, ``--patches`` patches a slide, the
witnesses that share of a tumour slide), ``cohort-<slides>-w<share>-d<d>/`` with its facts JSON beside it
(the oracle's ROC AUC and BACC on all slides, the witness direction), and prints them. ``compare`` runs
``automil tune`` as ``run`` does and prints what ``run`` prints, then every learner the run scored (but
``--skip``) at its defaults alone (its first trial, as the driver maps it) on the run's outer split, read from
the run's study storage: under the hold-out protocol trained on the training folds and scored on the
held-out fold, under the nested protocol on each outer fold (the mean), each fit in a killable worker at
``--fit-timeout``. It prints one line
a learner (its defaults alone beside its row in the run) and, side by side in the run's metric, the
``automil`` row, the best single learner at its defaults and the oracle on the same split (ROC AUC on the
outer folds; BACC with its cut chosen on the training folds), with the oracle on all bags from the facts.
Give a cohort ``--metric roc_auc`` (its ``--labels`` and ``--groups`` are found beside it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import cohorts  # experiments/ is on sys.path when this script runs
import numpy as np

from automil.records import PROCEDURE, Status
from automil.tune.final.ensemble_row import ENSEMBLE


@dataclass(frozen=True)
class ScaleSet:
    """The parameters of one generated set; equal parameters give equal data."""

    n_instances: int
    n_features: int = 64
    seed: int = 0
    bag_sizes: tuple = (50, 500)
    witness_rate: tuple = (0.01, 0.08)
    witness_shift: float = 3.0
    nuisance_sd: float = 0.5

    @classmethod
    def with_bags(cls, n_instances: int, n_bags: int, **params) -> ScaleSet:
        """A set of about ``n_bags`` bags: sizes uniform from half to one and a half times the mean size."""
        mean = n_instances / n_bags
        return cls(n_instances, bag_sizes=(max(1, round(mean / 2)), round(1.5 * mean)), **params)

    @property
    def n_bags(self) -> int:
        """Bags of the set: instances over the mean bag size, even (balanced labels), at least 2."""
        n_bags = max(2, round(self.n_instances / (sum(self.bag_sizes) / 2)))
        return n_bags + n_bags % 2

    @property
    def name(self) -> str:
        name = f"scale-{self.n_instances:.0e}-d{self.n_features}".replace("+0", "")
        return name if self.bag_sizes == ScaleSet.bag_sizes else f"{name}-b{self.n_bags}"


@dataclass
class Generated:
    X: np.ndarray  # (n_instances, n_features) float32
    offsets: np.ndarray  # (n_bags + 1,)
    y: np.ndarray  # (n_bags,) 0/1, balanced
    instance_y: np.ndarray  # (n_instances,) 1 for a witness
    direction: np.ndarray  # (n_features,) the hidden unit direction


def generate(spec: ScaleSet) -> Generated:
    rng = np.random.default_rng(spec.seed)
    direction = rng.standard_normal(spec.n_features)
    direction /= np.linalg.norm(direction)
    n_bags = spec.n_bags
    y = rng.permutation(np.arange(n_bags) % 2)
    sizes = rng.integers(spec.bag_sizes[0], spec.bag_sizes[1] + 1, n_bags)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    X = rng.standard_normal((int(offsets[-1]), spec.n_features), dtype=np.float32)
    instance_y = np.zeros(len(X), dtype=np.int8)
    nuisance = rng.normal(0.0, spec.nuisance_sd, (n_bags, spec.n_features)).astype(np.float32)
    shift = (spec.witness_shift * direction).astype(np.float32)
    for b in range(n_bags):  # a few thousand bags: a loop keeps the memory at one matrix
        start, stop = offsets[b], offsets[b + 1]
        X[start:stop] += nuisance[b]
        if y[b]:
            k = max(1, round(rng.uniform(*spec.witness_rate) * sizes[b]))
            witnesses = start + rng.choice(sizes[b], k, replace=False)
            X[witnesses] += shift
            instance_y[witnesses] = 1
    return Generated(X, offsets, y, instance_y, direction)


def oracle_bacc(data: Generated) -> float:
    """The best balanced accuracy of a threshold on each bag's largest projection on the true direction."""
    return cohorts.oracle_figures(_oracle_scores(data), data.y == 1)["bacc"]


def _oracle_scores(data: Generated) -> np.ndarray:
    return np.maximum.reduceat(data.X @ data.direction.astype(np.float32), data.offsets[:-1])


def write(data: Generated, path: Path, layout: str) -> Path:
    """The set as one .npz archive or as a folder of per-bag .npy files with labels.csv (docs/data.md)."""
    if layout == "npz":
        path = path.with_suffix(".npz")
        with open(path, "wb") as f:
            np.savez(f, X=data.X, offsets=data.offsets, y=data.y, instance_y=data.instance_y)
        return path
    path.mkdir(parents=True, exist_ok=True)
    names = [f"bag{b:05d}" for b in range(len(data.y))]
    (path / "labels.csv").write_text("bag,label\n" + "".join(f"{n},{y}\n" for n, y in zip(names, data.y)))
    for b, name in enumerate(names):
        rows = slice(data.offsets[b], data.offsets[b + 1])
        np.save(path / f"{name}.npy", data.X[rows])
        np.save(path / f"{name}.instance_y.npy", data.instance_y[rows])
    return path


def facts_path(data_path: Path) -> Path:
    return data_path.parent / f"{data_path.name.removesuffix('.npz')}.json"


def run_generate(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{'set':30s} {'bags':>6s} {'instances':>10s} {'d':>4s} {'MB':>8s} {'seconds':>8s} {'oracle BACC':>11s}")
    if args.bags and len(args.bags) != len(args.sizes):
        raise SystemExit(f"--bags: {len(args.bags)} bag counts for {len(args.sizes)} sizes; give one per size")
    for size, bags in zip(args.sizes, args.bags or [None] * len(args.sizes)):
        n, params = int(float(size)), {"n_features": args.features, "seed": args.seed}
        spec = ScaleSet(n, **params) if bags is None else ScaleSet.with_bags(n, bags, **params)
        start = time.perf_counter()
        data = generate(spec)
        path = write(data, out / spec.name, args.layout)
        seconds = time.perf_counter() - start
        figures = cohorts.oracle_figures(_oracle_scores(data), data.y == 1)
        oracle = figures["bacc"]
        facts = {**asdict(spec), "n_bags": len(data.y), "oracle_bacc": oracle, "oracle_roc_auc": figures["roc_auc"],
                 "direction": data.direction.tolist()}
        facts_path(path).write_text(json.dumps(facts, indent=2) + "\n")
        print(f"{path.name:30s} {len(data.y):6d} {len(data.X):10d} {spec.n_features:4d} "
              f"{data.X.nbytes / 1e6:8.1f} {seconds:8.1f} {100 * oracle:11.1f}")


# ---- run: the main job on one set ---------------------------------------------------------------------
class TreeMemory:
    """Peak memory summed over a process and all its descendants, sampled from /proc (no psutil).

    Three sums: resident set sizes (shared pages counted in every process that maps them), proportional
    set sizes (shared pages split among the processes sharing them: what the run really holds, the pages of
    the mapped instance file it has read included) and private anonymous memory (``RssAnon``: what the
    processes allocated themselves, without any page of a file, which the kernel can drop and read again).
    """

    def __init__(self, pid: int, interval: float = 0.25):
        self.pid, self.interval = pid, interval
        self.peak_rss = self.peak_pss = self.peak_private = 0
        self.peak_processes = 0
        self.peak_private_at = 0.0  # seconds after the start, and who held it: to place the peak in the run's log
        self.peak_private_holders: list[tuple[int, int, str]] = []  # (pid, RssAnon kB, command), largest first
        self.timeline: list[tuple[float, int]] = []  # (seconds after the start, summed RssAnon kB) every minute
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _sample(self):
        while not self._stop.is_set():
            pids = self._tree()
            rss = sum(_kb(pid, "status", "VmRSS:") for pid in pids)
            pss = sum(_kb(pid, "smaps_rollup", "Pss:") for pid in pids)
            held = {pid: _kb(pid, "status", "RssAnon:") for pid in pids}
            private = sum(held.values())
            self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)
            elapsed = time.monotonic() - self._start
            if not self.timeline or elapsed - self.timeline[-1][0] >= 60.0:
                self.timeline.append((elapsed, private))
            if private > self.peak_private:
                self.peak_private, self.peak_private_at = private, elapsed
                self.peak_private_holders = sorted(((pid, kb, _command(pid)) for pid, kb in held.items()),
                                                   key=lambda holder: -holder[1])
            self.peak_processes = max(self.peak_processes, len(pids))
            self._stop.wait(self.interval)

    def _tree(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                except OSError:
                    continue  # the process ended while we looked
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
        tree, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo.extend(children.get(pid, []))
        return tree


def _command(pid: int) -> str:
    """A process's command line, shortened: a worker is told from the driver by it."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[-80:]
    except OSError:
        return "?"


def _kb(pid: int, file: str, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/{file}").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass  # gone, or not ours to read: counts as nothing
    return 0


def run_main_job(args):
    data = Path(args.data).resolve()
    with _workdir(args) as work:
        rows, wall, memory = tune(data, work, args)
    report(rows, wall, memory, _facts(data), args.timeout, _jobs(args.extra))


def _passed_on(extra: list[str]) -> argparse.Namespace:
    """The ``automil tune`` options this script reads among those it passes on (``None`` where not given)."""
    known = argparse.ArgumentParser(add_help=False)
    for option in ("--labels", "--groups", "--storage"):
        known.add_argument(option)
    known.add_argument("--jobs", type=int)
    return known.parse_known_args(extra)[0]


def _jobs(extra: list[str]) -> int:
    """The run's tuning processes: its ``--jobs``, else automil's default on this machine."""
    from automil.tune.options import default_jobs

    return _passed_on(extra).jobs or default_jobs()


def _facts(data: Path) -> dict:
    return json.loads(facts_path(data).read_text()) if facts_path(data).exists() else {}


def _workdir(args):
    """``--workdir`` (kept), else a temporary directory removed after."""
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
        return contextlib.nullcontext(Path(args.workdir).resolve())
    return _temporary()


@contextlib.contextmanager
def _temporary():
    with tempfile.TemporaryDirectory(prefix="automil-scale-") as work:
        yield Path(work)


def tune(data: Path, work: Path, args) -> tuple[list[dict], float, TreeMemory]:
    """``automil tune --dataset DATA --timeout T --json`` in ``work``: its rows, wall seconds and memory."""
    rows_path = work / "rows.json"
    command = [sys.executable, "-c", "import sys; from automil.cli.main import main; sys.exit(main())", "tune",
               "--dataset", str(data), "--timeout", str(args.timeout), "--json", str(rows_path), *args.extra]
    print("$", " ".join(command), f"(in {work})", flush=True)
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=work)  # its progress and leaderboard print as they come
    with TreeMemory(process.pid) as memory:
        code = process.wait()
    wall = time.monotonic() - start
    if code != 0 or not rows_path.exists():
        raise SystemExit(f"automil tune exited with {code}")
    return json.loads(rows_path.read_text()), wall, memory


def report(rows: list[dict], wall: float, memory: TreeMemory, facts: dict, timeout: float, jobs: int):
    matrix_mb = facts.get("n_instances", 0) * facts.get("n_features", 0) * 4 / 1e6
    print(f"wall time        {wall:8.1f} s   ({100 * wall / timeout:.1f}% of the {timeout:.0f} s budget; "
          f"target <= 103%)")
    print(f"peak memory      {memory.peak_pss / 1e3:8.0f} MB summed PSS, {memory.peak_rss / 1e3:.0f} MB summed RSS, "
          f"{memory.peak_private / 1e3:.0f} MB summed private (RssAnon), up to {memory.peak_processes} processes "
          f"(float32 instance matrix {matrix_mb:.0f} MB)")
    print(f"private peak at  {memory.peak_private_at:8.1f} s after the start: "
          + ", ".join(f"{kb / 1e3:.0f} MB pid {pid} ({command.strip()})" for pid, kb, command in
                      memory.peak_private_holders))
    print("private by minute " + " ".join(f"{kb / 1e6:.1f}" for _, kb in memory.timeline) + " GB")
    print_learners(rows)
    oracle = facts.get("oracle_bacc")
    target = "target gap <= 5 at 1e5, <= 8 at 1e6"
    procedure = next((r for r in rows if r.get("learner") == PROCEDURE), None)
    figure = None if procedure is None else procedure.get("balanced_accuracy")
    if figure is not None:
        print(f"automil BACC     {100 * figure:8.1f}   (the procedure's own {procedure.get('headline')} figure"
              f"{_against(figure, oracle)}; {target})")
    else:
        print("automil BACC            -   (no automil row with a figure: the procedure has no headline)")
    learners = [r for r in rows if _has_figure(r) and r.get("learner") != PROCEDURE]
    best = max(learners, key=lambda r: r["balanced_accuracy"], default=None)
    if best is not None:
        value = best["balanced_accuracy"]
        print(f"best row BACC    {100 * value:8.1f}   ({best['learner']}, {best.get('headline')}"
              f"{_against(value, oracle)})")
    chosen = next((r for r in rows if r.get("selected")), None)
    chosen_figure = _percent(chosen.get("balanced_accuracy") if chosen else None)
    print(f"chosen model     {chosen['learner'] if chosen else '-':>8s}   "
          f"{_made_of(chosen)}, BACC {chosen_figure}; target: a chosen model at every size")
    # the automil row is the procedure and the ensemble's seconds are its members' fits, each counted with its
    # learner: neither spends a budget its own
    none = [r for r in rows if not _has_figure(r) and r.get("status") != Status.SKIPPED
            and r.get("learner") not in (PROCEDURE, ENSEMBLE.name)]
    # a learner's seconds are those of the process that ran it: the budget holds the run's processes' seconds
    spent, held = sum(_spent(r) for r in none), jobs * timeout
    names = ", ".join(f"{r['learner']} ({_status(r)})" for r in none) or "none"
    print(f"no figure        {spent:8.1f} s   ({100 * spent / held:.1f}% of the {held:.0f} s of {jobs} tuning "
          f"process{'es' * (jobs > 1)} over the budget, {len(none)} learners: {names}; target <= 10%)")


def _made_of(chosen: dict | None) -> str:
    """An ensemble's members, else a learner's trials."""
    if chosen is None:
        return "none"
    if chosen.get("members"):
        return "of " + ", ".join(m["learner"] for m in chosen["members"])
    return f"{chosen.get('trials') or 0} trials"


def print_learners(rows: list[dict]):
    """One line a learner: status, headline BACC, the ladder rung it ended on ('-' where the row has none),
    and the seconds of the budget it used."""
    print(f"{'learner':22s} {'status':>10s} {'BACC':>6s} {'rung':>8s} {'seconds':>8s}")
    for row in rows:
        if row.get("status") == Status.SKIPPED:
            continue
        rung = row.get("rung")
        print(f"{row['learner']:22s} {_status(row):>10s} {_percent(row.get('balanced_accuracy')):>6s} "
              f"{'-' if rung is None else str(rung):>8s} {_seconds(row):>8s}")


def _has_figure(row: dict) -> bool:
    """Whether the row has a headline that is a result: one whose refit predicted one class is flagged, never a
    result (partial rows may have none)."""
    return row.get("balanced_accuracy") is not None and not row.get("one_class")


def _status(row: dict) -> str:
    """The row's status, ``one class`` where its headline refit predicted one class (flagged, never a choice)."""
    return "one class" if row.get("one_class") else row.get("status") or "-"


def _spent(row: dict) -> float:
    """Seconds of the budget a learner used: its ``budget_seconds``, else its mean fit time."""
    return row.get("budget_seconds") or row.get("fit_seconds") or 0.0


def _seconds(row: dict) -> str:
    return "-" if row.get("budget_seconds") is None and row.get("fit_seconds") is None else f"{_spent(row):.1f}"


def _against(value: float, oracle: float | None) -> str:
    return "" if oracle is None else f", oracle {100 * oracle:.1f}, gap {100 * (oracle - value):.1f} points"


def _percent(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


# ---- read: the data path of a run alone ---------------------------------------------------------------------
READ_SCRIPT = """
import sys
from functools import partial
from automil.data.datasets import load_bags
from automil.tune.workers.processes import release_instances, share_instances
bags = share_instances(partial(load_bags, sys.argv[1], labels=sys.argv[2] or None, groups=sys.argv[3] or None))
print(f"{bags.n_bags} bags, {bags.n_instances} instances x {bags.n_features} {bags.X.dtype}, "
      f"{'in the mapped file' if bags.instances_file else 'in memory'}")
release_instances(bags)
"""


def run_read(args):
    """Read a set for a run as ``automil tune`` does (into its shared file) and print the peak memory."""
    data = Path(args.data).resolve()
    start = time.monotonic()
    process = subprocess.Popen([sys.executable, "-c", READ_SCRIPT, str(data), args.labels or "", args.groups or ""])
    with TreeMemory(process.pid, interval=0.05) as memory:
        code = process.wait()
    if code != 0:
        raise SystemExit(f"reading {data} failed with exit code {code}")
    print(f"read in {time.monotonic() - start:.1f} s; peak memory {memory.peak_private / 1e3:.0f} MB private "
          f"(RssAnon), {memory.peak_pss / 1e3:.0f} MB PSS (with the pages of the mapped file it has read)")


# ---- cohort: slide cohorts at several witness shares ------------------------------------------------------
def run_cohort(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{'set':26s} {'slides':>6s} {'cases':>5s} {'tumour':>6s} {'patches':>8s} {'witness':>7s} {'seconds':>7s} "
          f"{'oracle AUC':>10s} {'oracle BACC':>11s}")
    for slides in args.slides:
        for share in args.witness_shares:
            spec = cohorts.Cohort(slides, share, tuple(args.patches), args.features, args.seed, args.layout)
            start = time.perf_counter()
            path, facts = cohorts.write_cohort(spec, out)
            print(f"{path.name:26s} {facts['n_bags']:6d} {facts['n_cases']:5d} {facts['n_tumour']:6d} "
                  f"{facts['n_instances']:8d} {100 * share:6.1f}% {time.perf_counter() - start:7.1f} "
                  f"{100 * facts['oracle_roc_auc']:10.1f} {100 * facts['oracle_bacc']:11.1f}", flush=True)


# ---- compare: the automil row, each learner's defaults alone, the oracle --------------------------------------
def run_compare(args):
    import automil
    from automil.tune.options import TuneOptions
    from automil.tune.workers.fits import fit_worker

    data = Path(args.data).resolve()
    facts = _facts(data)
    tune_options = _passed_on(args.extra)
    if tune_options.labels is None and facts.get("labels") and "--labels" not in args.extra:
        labels = facts_path(data).parent / facts["labels"]  # beside the facts JSON
        args.extra += ["--labels", str(labels), "--groups", facts.get("groups", "case_id")]
        tune_options = _passed_on(args.extra)
    with _workdir(args) as work:
        rows, wall, memory = tune(data, work, args)
        report(rows, wall, memory, facts, args.timeout, _jobs(args.extra))
        learners = [r for r in rows if r.get("learner") in automil.learners() and r.get("status") != Status.SKIPPED
                    and r["learner"] not in args.skip]
        if not learners:
            raise SystemExit("the run has no learner row to compare with")
        assignment, protocol = cohorts.run_folds(work, tune_options.storage, learners[0]["study"])
    bags = automil.load_bags(str(data), labels=tune_options.labels, groups=tune_options.groups)
    if bags.n_bags != len(assignment):
        raise SystemExit(f"the run's folds hold {len(assignment)} bags, {data} {bags.n_bags}")
    outer = cohorts.outer_folds(protocol, int(assignment.max()) + 1)
    metric = rows[0].get("metric") or "balanced_accuracy"
    print(f"\nEvery learner's defaults alone on the run's {protocol} split ({len(outer)} outer "
          f"fold{'s' * (len(outer) > 1)}, {int(np.isin(assignment, outer).sum())} test bags), one fit at a time, "
          f"{args.fit_timeout:g} s a fit", flush=True)
    worker = fit_worker(TuneOptions(jobs=max(1, os.cpu_count() or 1)))  # one thread, as the driver's at --jobs
    alone = {}
    short = _short(metric)
    print(f"{'':22s} {'its defaults alone':^28s}   {'its row in the run':^19s}")
    print(f"{'learner':22s} {'status':>10s} {short:>8s} {'seconds':>8s}   {short:>8s} {'status':>10s}")
    try:
        worker.set_data(bags)
        for row in learners:
            name = row["learner"]
            alone[name] = cell = cohorts.defaults_alone(worker, bags, name, assignment, outer, row.get("seed") or 0,
                                                args.fit_timeout)
            print(f"{name:22s} {cell['status']:>10s} {_percent(cell.get(metric)):>8s} "
                  f"{cell.get('seconds', 0.0):8.1f}   {_percent(row.get(metric)):>8s} {row.get('status') or '-':>10s}"
                  + (f"  ({cell['error']})" if cell.get("error") else ""), flush=True)
    finally:
        worker.close()
    side_by_side(rows, alone, metric, _oracle(bags, facts, assignment, outer, metric))


def _oracle(bags, facts: dict, assignment, outer, metric: str) -> tuple[float | None, float | None]:
    """The oracle's ``metric`` on the run's split (``None`` without the direction in the facts, or for accuracy)
    and on all the bags (from the facts)."""
    whole = facts.get({"roc_auc": "oracle_roc_auc", "balanced_accuracy": "oracle_bacc"}.get(metric, ""))
    if "direction" not in facts or metric not in ("roc_auc", "balanced_accuracy"):
        return None, whole
    scores = cohorts.oracle_scores(bags, facts["direction"])
    return cohorts.oracle_on_split(scores, bags.y == bags.classes[-1], assignment, outer)[metric], whole


def side_by_side(rows: list[dict], alone: dict, metric: str, oracle: tuple[float | None, float | None]):
    procedure = next((r for r in rows if r.get("learner") == PROCEDURE), None)
    figure = None if procedure is None else procedure.get(metric)
    scored = {name: cell[metric] for name, cell in alone.items() if cell.get(metric) is not None}
    best = max(scored, key=scored.get, default=None)
    on_split, whole = oracle
    headline = procedure.get("headline") if procedure else "-"
    columns = (f"automil ({headline})", "best learner at its defaults", "oracle, same split", "oracle, all bags")
    print("\n" + " " * 9 + "   ".join(columns))
    values = (_percent(figure), f"{_percent(scored.get(best))} ({best or 'none'})", _percent(on_split),
              _percent(whole))
    print(f"{_short(metric):>8s} " + "   ".join(f"{v:>{len(c)}s}" for v, c in zip(values, columns)))
    if procedure and procedure.get("choices"):
        print(f"automil's choice in each outer split: {', '.join(str(c) for c in procedure['choices'])}")


def _short(metric: str) -> str:
    return {"balanced_accuracy": "BACC", "roc_auc": "ROC AUC", "accuracy": "ACC"}.get(metric, metric)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate", help="write the sets and print their sizes and oracle")
    gen.add_argument("--sizes", nargs="+", default=["1e4", "1e5", "1e6"], help="instances per set")
    gen.add_argument("--bags", nargs="+", type=int, help="bags per set, one per size (default: bags of 50 to "
                     "500 instances); e.g. --sizes 1e5 1e6 --bags 1000 4000")
    gen.add_argument("--features", type=int, default=64)
    gen.add_argument("--layout", choices=("npz", "folder"), default="npz")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "automil-scale"))
    gen.set_defaults(run=run_generate)
    run = commands.add_parser("run", help="run automil tune on one generated set and print the figures")
    run.add_argument("data", help="a set written by generate (.npz file or folder)")
    run.add_argument("--timeout", type=float, default=600)
    run.add_argument("--workdir", help="run in this directory and keep its studies and MLflow store "
                     "(default: a temporary one, removed after)")
    run.set_defaults(run=run_main_job)
    read = commands.add_parser("read", help="read a set as a run does, into its shared file, and print the "
                               "peak memory of reading it")
    read.add_argument("data", help="a set written by generate or cohort")
    read.add_argument("--labels", help="a cohort's labels CSV")
    read.add_argument("--groups", help="its column of every slide's case")
    read.set_defaults(run=run_read)
    cohort = commands.add_parser("cohort", help="write slide cohorts and print their sizes and oracle")
    cohort.add_argument("--slides", type=int, nargs="+", default=[100, 300, 1000],
                        help="slides per cohort (about: cases of 2 or 3 slides)")
    cohort.add_argument("--witness-shares", type=float, nargs="+", default=[0.01, 0.03, 0.1],
                        help="the witness patches' share of a tumour slide")
    cohort.add_argument("--patches", type=int, nargs=2, default=[60, 180], metavar=("LOW", "HIGH"),
                        help="patches per slide, uniform from LOW to HIGH")
    cohort.add_argument("--features", type=int, default=64)
    cohort.add_argument("--layout", choices=("trident", "clam"), default="trident")
    cohort.add_argument("--seed", type=int, default=0)
    cohort.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "automil-cohorts"))
    cohort.set_defaults(run=run_cohort)
    compare = commands.add_parser("compare", help="run automil tune on one set, then every learner's defaults "
                                  "alone on its outer split, and print both beside the oracle")
    compare.add_argument("data", help="a set written by generate or cohort")
    compare.add_argument("--timeout", type=float, default=600)
    compare.add_argument("--fit-timeout", type=float, default=300, help="seconds a defaults fit may take")
    compare.add_argument("--skip", action="append", default=[], metavar="LEARNER",
                         help="leave this learner's defaults out (repeatable)")
    compare.add_argument("--workdir", help="run in this directory and keep its studies and MLflow store")
    compare.set_defaults(run=run_compare)
    args, extra = parser.parse_known_args()  # run, compare: what they do not know goes to automil tune
    if extra and args.command not in ("run", "compare"):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = [a for a in extra if a != "--"]
    args.run(args)


if __name__ == "__main__":
    main()
