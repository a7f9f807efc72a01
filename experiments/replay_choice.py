"""The run's choice made again on a finished run's studies, with the code of this checkout: no tuning and no
refit of a learner (each reuses its stored result), so a change to the ensemble, the leaderboard or the rule
of the choice is measured on the very trials a reported run made.

    python experiments/replay_choice.py RUN_DIR --dataset FILE [--timeout 600] [-- TUNE OPTIONS]

RUN_DIR is the working directory of an ``automil tune`` run (``studies/automil.journal`` and the ``--json``
rows, ``rows.json``, as ``experiments/scale.py run`` leaves them). Its studies are copied to a temporary
directory and ``automil tune --n-trials 1 --no-track`` runs there over the learners whose row is ``ok``: each
has its trials, so none is tuned, and its stored result matches them, so none is refitted; the ensemble, the
``automil`` row and the choice are computed again. Only the chosen model is fitted (the run must end with
it). Give the options the run was made with after ``--`` (``--metric roc_auc --labels CSV --groups case_id``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SPECIAL = ("automil", "ensemble")


def learners_with_results(rows: list[dict]) -> list[str]:
    """The learners whose row is ``ok`` (the ensemble and the procedure are computed, not learners)."""
    return [row["learner"] for row in rows if row["status"] == "ok" and row["learner"] not in SPECIAL]


def summary(rows: list[dict], metric: str) -> str:
    """The ``automil`` row, its choice in each outer split, the ensemble row, and the best learner row."""
    by_name = {row["learner"]: row for row in rows}
    procedure, ensemble = by_name.get("automil", {}), by_name.get("ensemble", {})
    learners = [row for row in rows if row["learner"] not in SPECIAL and row.get(metric) is not None]
    best = max(learners, key=lambda row: row[metric], default=None)

    def shown(row):
        value = row.get(metric)
        return "-" if value is None else f"{100 * value:.1f}"

    best_text = "-" if best is None else f"{best['learner']} {shown(best)}"
    return (f"automil {shown(procedure)} (choices {procedure.get('choices')}), ensemble {shown(ensemble)} "
            f"(tuning score {ensemble.get('tuning_score')}, its gain's lower bound "
            f"{ensemble.get('tuning_gain_bound')}), best learner {best_text}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the run's working directory")
    parser.add_argument("--dataset", required=True, help="the data set the run tuned")
    parser.add_argument("--timeout", default="600", help="the run's --timeout (default 600)")
    parser.add_argument("--rows", default="rows.json", help="the run's --json rows, in RUN (default rows.json)")
    argv = sys.argv[1:] if argv is None else list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args, extra = parser.parse_args(argv[:split]), argv[split + 1:]
    rows = json.loads((args.run / args.rows).read_text())
    metric = next((row["metric"] for row in rows if row.get("metric")), "balanced_accuracy")
    print("as run:   ", summary(rows, metric))
    with tempfile.TemporaryDirectory() as work:
        shutil.copytree(args.run / "studies", Path(work) / "studies")
        command = [sys.executable, "-c", "import sys; from automil.cli.main import main; sys.exit(main())", "tune",
                   "--dataset", args.dataset, "--timeout", args.timeout, "--n-trials", "1", "--no-track",
                   "--json", "rows.json", *extra]
        for learner in learners_with_results(rows):
            command += ["--learner", learner]
        done = subprocess.run(command, cwd=work, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-2000:], sep="\n", file=sys.stderr)
            return done.returncode
        print("replayed: ", summary(json.loads((Path(work) / "rows.json").read_text()), metric))
    return 0


if __name__ == "__main__":
    sys.exit(main())
