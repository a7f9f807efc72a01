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
    register(automil.LearnerSpec(
        name="citation-knn", estimator=CitationKNN, search_space=spaces.citation_knn_space,
        description="Citation-kNN: votes of the R nearest bags and of the bags that have it among their C "
                    "nearest, minimal Hausdorff distance (Wang & Zucker 2000)",
        multiclass=True, sparse=True, first_trial=spaces.FIRST_TRIALS["citation-knn"], fit_growth=2.0,
        published=published.PUBLISHED["citation-knn"]))
