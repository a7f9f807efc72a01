"""Peak memory and seconds of a network's fit and prediction at its defaults against the instances it scores
per prediction batch (``automil_deep.training.PREDICT_CELLS``, which also bounds early stopping's held-out
pass of every epoch), one thread, each cell in a fresh process:

    python benchmarks/deep_memory.py DATA.npz [--learners abmil MI-Net] [--cells 16 14 12]

A cell fits on every bag of ``DATA`` (a file ``automil tune --dataset`` reads) and predicts them all; its
peaks are the process's ``VmHWM`` (reset by ``/proc/self/clear_refs`` before each step) less its resident
memory before the fit (the bags read, torch imported). Prints a markdown table for docs/benchmarks-deep.md with
each cell's peaks and seconds as ratios to the first ``--cells`` size, and whether the predictions are the
same.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CELL = """
import json, time
import torch
import automil
import automil_deep.training as training
from automil.data.readers import read_bags

torch.set_num_threads(1)
training.PREDICT_CELLS = 1 << {power}
bags = read_bags({path!r})

def memory(field):
    return next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith(field))

def reset():
    open("/proc/self/clear_refs", "w").write("5")

base = memory("VmRSS:")
reset()
start = time.perf_counter()
model = automil.get_learner({learner!r}).build(random_state=0).fit(bags)
fit_seconds, fit_peak = time.perf_counter() - start, memory("VmHWM:") - base
reset()
start = time.perf_counter()
probabilities = model.predict_proba(bags)
print(json.dumps({{"fit_seconds": fit_seconds, "fit_peak": fit_peak, "predict_seconds": time.perf_counter() - start,
                  "predict_peak": memory("VmHWM:") - base, "probabilities": probabilities[:, -1].tolist()}}))
"""


def measure(learner: str, path: str, power: int) -> dict:
    """One cell, in its own process (a peak belongs to the process that reached it)."""
    out = subprocess.run([sys.executable, "-c", CELL.format(power=power, path=path, learner=learner)],
                         capture_output=True, text=True, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data")
    parser.add_argument("--learners", nargs="+", default=["abmil", "MI-Net"])
    parser.add_argument("--cells", nargs="+", type=int, default=[16, 14, 12],
                        help="powers of 2 of PREDICT_CELLS, the first the reference of the ratios")
    args = parser.parse_args(argv)
    print("| learner | instances a prediction batch | fit peak (MB) | predict peak (MB) | fit s | predict s | "
          "same predictions |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for learner in args.learners:
        first = None
        for power in args.cells:
            cell = measure(learner, args.data, power)
            first = first or cell
            same = max(abs(a - b) for a, b in zip(cell["probabilities"], first["probabilities"], strict=True)) < 1e-6
            print(f"| {learner} | 2^{power} | {cell['fit_peak'] / 2**20:.0f} "
                  f"({cell['fit_peak'] / first['fit_peak']:.2f}) | {cell['predict_peak'] / 2**20:.0f} "
                  f"({cell['predict_peak'] / first['predict_peak']:.2f}) | {cell['fit_seconds']:.1f} "
                  f"({cell['fit_seconds'] / first['fit_seconds']:.2f}) | {cell['predict_seconds']:.2f} | "
                  f"{'yes' if same else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
