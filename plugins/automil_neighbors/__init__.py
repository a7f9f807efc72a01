"""automil built-in plugin: bag-distance learners (Citation-kNN).

Written as a third-party plugin would be: it imports only the public automil API, and the estimator loads
when the hook runs.
"""

import automil


@automil.hookimpl
def register_learners(register):
    """Register citation-knn."""
    from automil_neighbors import published, spaces
    from automil_neighbors.citation_knn import CitationKNN

    # fit_growth: every pair of training instances is compared, so a fit is quadratic in instances.
    # memory_factor: `python experiments/memory_factors.py`, the larger size's factor x 1.25 (docs/benchmarks.md)
    # Most of its working set is a fixed 128 MiB block of instance distances: the factor of 500 bags (20) is
    # declared, above the 6.7 of 2,000 bags.
    register(automil.LearnerSpec(
        name="citation-knn", memory_factor=25.5, estimator=CitationKNN, search_space=spaces.citation_knn_space,
        description="Citation-kNN: votes of the R nearest bags and of the bags that have it among their C "
                    "nearest, minimal Hausdorff distance (Wang & Zucker 2000)",
        multiclass=True, sparse=True, first_trial=spaces.FIRST_TRIALS["citation-knn"], fit_growth=2.0,
        published=published.PUBLISHED["citation-knn"]))
