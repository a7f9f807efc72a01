"""Writes automil_example/shapes-toy.data.gz (MILL text format), the example plugin's dataset."""

import gzip
from pathlib import Path

import numpy as np

rng = np.random.default_rng(2024)
lines = []
for b in range(60):
    label = b % 2
    size = int(rng.integers(2, 8))
    X = rng.uniform(-1, 1, (size, 4))
    if label:  # a positive bag holds one instance far out along feature 2
        X[rng.integers(size), 2] = rng.normal(3.0, 0.3)
    for j, row in enumerate(X):
        values = ",".join(f"{v:.6f}" for v in row)
        lines.append(f"shape_{b}_{j},shape_{b},{label},{values}\n")
target = Path(__file__).parent / "automil_example" / "shapes-toy.data.gz"
with gzip.open(target, "wt", newline="") as f:
    f.writelines(lines)
print(f"wrote {target} ({len(lines)} instances)")
