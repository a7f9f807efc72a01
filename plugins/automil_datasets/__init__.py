"""automil built-in plugin: the MIL benchmark datasets, digits-bags and the synthetic generator.

Only the hook lives here; the table and the loaders are imported inside it, and the readers and numpy only
when a dataset is loaded, so listing datasets stays fast.
"""

import automil


@automil.hookimpl
def register_datasets(register):
    """Register every benchmark file of MANIFEST.toml plus the generated ``digits-bags`` and ``synthetic``."""
    from functools import partial

    from automil_datasets import catalog, loaders

    for entry in catalog.BENCHMARK_FILES:
        register(automil.DatasetSpec(
            name=entry.name, load=partial(loaders.load_benchmark, entry), description=entry.description,
            citation=entry.citation, n_bags=entry.n_bags, n_instances=entry.n_instances,
            n_features=entry.n_features, n_classes=entry.n_classes,
            files=(automil.DataFile(entry.path, entry.sha256, entry.url),)))
    register(automil.DatasetSpec(
        name="digits-bags", load=loaders.load_digits_bags,
        description="MNIST-bags from scikit-learn's 8x8 digits: a bag is positive when it holds a 9 "
                    "(100 positive, 100 negative bags of about 10 images)",
        citation="Ilse, M., Tomczak, J. M., & Welling, M. (2018). Attention-based deep multiple instance "
                 "learning. ICML 2018, 2127-2136.",
        n_bags=catalog.DIGITS["n_positive"] + catalog.DIGITS["n_negative"],
        n_instances=catalog.DIGITS_N_INSTANCES, n_features=64, n_classes=2))
    register(automil.DatasetSpec(
        name="synthetic", load=loaders.load_synthetic,
        description="pdMISVM's generator: bags of 3-5 instances, the first from a unit-variance cluster of "
                    "the bag's class, the others uniform noise",
        citation="A Linear Primal-Dual Multi-Instance SVM for Big Data Classifications. ICDM 2021.",
        n_bags=catalog.SYNTHETIC["n_bags"], n_instances=catalog.SYNTHETIC_N_INSTANCES,
        n_features=catalog.SYNTHETIC["n_features"], n_classes=catalog.SYNTHETIC["n_classes"]))
