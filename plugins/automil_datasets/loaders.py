"""The ``load`` functions of the registered datasets; heavy modules are imported on the first load."""

from __future__ import annotations

from automil_datasets.catalog import DIGITS, SIVAL_CLASSES, SIVAL_IMAGES_PER_CLASS, SYNTHETIC, BenchmarkFile


def load_benchmark(entry: BenchmarkFile):
    """Fetch (verify or download) the entry's file and read it; SIVAL gets its labels from the bag ids."""
    from automil import DataFile, fetch, read_bags

    bags = read_bags(fetch(DataFile(entry.path, entry.sha256, entry.url)), format=entry.format)
    if entry.labels == "file":
        return bags
    return _sival_labels(bags, binary=entry.labels == "sival-binary")


def _sival_labels(bags, binary: bool):
    """The SIVAL object of each bag, from ``bagId = (class number - 1) * 60 + image number``; a positive
    bag's file label is its class number, which this checks."""
    import numpy as np

    bag_id = bags.names.astype(np.int64)
    class_number = (bag_id - 1) // SIVAL_IMAGES_PER_CLASS + 1
    image = bag_id - (class_number - 1) * SIVAL_IMAGES_PER_CLASS
    contradicts = (bags.y != 0) & (bags.y != class_number)
    if contradicts.any():
        i = int(np.argmax(contradicts))
        raise ValueError(f"{bags.source}: bag {bag_id[i]} has label {bags.y[i]} but its id says class "
                         f"{class_number[i]}: not the MCILBoost SIVAL numbering")
    objects = np.asarray(SIVAL_CLASSES, dtype=object)[class_number - 1]
    y = (bags.y > 0).astype(np.int64) if binary else objects
    names = [f"{o}_{n}" for o, n in zip(objects, image)]
    return type(bags)(bags.X, bags.offsets, y, instance_y=bags.instance_y, names=names,
                      feature_names=bags.feature_names, source=bags.source)


def load_synthetic():
    from automil_datasets.synthetic import make_synthetic_bags

    return make_synthetic_bags(**SYNTHETIC)


def load_digits_bags():
    from automil_datasets.digits import make_digits_bags

    return make_digits_bags(**DIGITS)
