"""An epoch of each deep learner on every device this machine has: the CPU, and each CUDA GPU torch sees.

    python benchmarks/deep_device.py DATA [--learners abmil mi-net ...] [--epochs 3] [--max-instances 512]

Each cell fits the learner's defaults with nothing held out for ``--epochs`` epochs on ``device`` and divides
the wall seconds by the epochs (a GPU's work is asynchronous, so the clock stops after the device has
finished: ``torch.cuda.synchronize``); a first short fit on each device pays its one-time costs (CUDA's
start, kernel loading) and is left out. The CPU runs the process's thread share (``OMP_NUM_THREADS`` when
set). Prints a markdown table with each device's speed-up over the CPU, for docs/deep.md; on a machine
without a GPU the table has the CPU's row alone.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import automil


def devices() -> list[str]:
    return ["cpu"] + [f"cuda:{index}" for index in range(torch.cuda.device_count())]


def epoch_seconds(learner: str, bags, device: str, epochs: int, max_instances: int | None) -> float:
    estimator = automil.get_learner(learner).build(epochs=epochs, validation_fraction=0.0, device=device,
                                                   max_instances=max_instances, random_state=0)
    start = time.perf_counter()
    estimator.fit(bags)
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)
    return (time.perf_counter() - start) / epochs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="a dataset name or file (e.g. a set of experiments/scale.py)")
    parser.add_argument("--learners", nargs="+", default=["abmil", "mi-net", "MI-Net", "transmil", "dsmil"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--max-instances", type=int, default=512)
    args = parser.parse_args()
    bags = automil.load_bags(args.data)
    warm_up = bags.subset(np.arange(min(8, bags.n_bags)))
    found = devices()
    for device in found:
        epoch_seconds(args.learners[0], warm_up, device, 1, args.max_instances)
    print(f"{args.data}: {bags.n_bags} bags, {bags.n_instances:,} instances, {bags.n_features} features; "
          f"torch {torch.__version__}, threads {torch.get_num_threads()}, devices "
          + ", ".join(d if d == "cpu" else f"{d} ({torch.cuda.get_device_name(d)})" for d in found))
    columns = [f"{d}: s per epoch" for d in found] + [f"{d} speed-up" for d in found[1:]]
    print("| learner | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for learner in args.learners:
        seconds = [epoch_seconds(learner, bags, device, args.epochs, args.max_instances) for device in found]
        cells = [f"{s:.2f}" for s in seconds] + [f"{seconds[0] / s:.1f}x" for s in seconds[1:]]
        print(f"| {learner} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
