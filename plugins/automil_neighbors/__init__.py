"""automil built-in plugin: bag-distance learners (Citation-kNN).

Written as a third-party plugin would be: it imports only the public automil API, and the estimator loads
when the hook runs.
"""

import automil


@automil.hookimpl
def register_learners(register):
    """Register citation-knn."""
    from automil import LearnerSpec, Published
    from automil_neighbors.citation_knn import CitationKNN

    register(LearnerSpec(
        "citation-knn", CitationKNN, search_space,
        "Citation-kNN: votes of the R nearest bags and of the bags that have it among their C nearest, "
        "minimal Hausdorff distance (Wang & Zucker 2000)",
        multiclass=True, sparse=True, first_trial=FIRST_TRIAL,
        # The instance distance matrix between a test bag and every training instance is the cost; no
        # training step beyond the training bags' own distances, so a fit is quadratic in instances.
        fit_growth=2.0,
        published=Published("Wang & Zucker, ICML 2000", {"musk1": 92.4, "musk2": 86.3},
                            "R and C set per data set (R = 2, C = 4 on both); quoted from memory of the "
                            "paper, not re-checked (docs/published.md, section 1)")))


def search_space(trial) -> dict:
    """References R in [1, 10], citers C in [0, 20] (C = 0 is the plain bag kNN; the paper's best, R = 2 and
    C = 4, is inside) and the bag distance."""
    return {"references": trial.suggest_int("references", 1, 10),
            "citers": trial.suggest_int("citers", 0, 20),
            "hausdorff": trial.suggest_categorical("hausdorff", ["minimal", "maximal"])}


# The paper's setting on both MUSK sets, as a point of the space above: the first trial of every study (the
# minimal distance is also the better one on elephant, fox and tiger: docs/algorithms.md 19).
FIRST_TRIAL = {"references": 2, "citers": 4, "hausdorff": "minimal"}
