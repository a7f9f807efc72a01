"""automil built-in plugin: embedded-space learners, each bag turned into one vector for an ordinary
classifier, survival model or regressor (bag-stats, MILES, miVLAD, miFV, witness-subspace).

Written as a third-party plugin would be: it imports only the public automil API. The estimators
(scikit-learn) load when the hook runs.
"""

import automil


@automil.hookimpl
def register_learners(register):
    """Register bag-stats, miles, mivlad, mifv and witness-subspace."""
    from automil_embedding import published, spaces
    from automil_embedding.bag_stats import BagStats, BagStatsRegressor, BagStatsSurvival
    from automil_embedding.coding import MiFV, MiFVRegressor, MiFVSurvival, MiVLAD, MiVLADRegressor, MiVLADSurvival
    from automil_embedding.miles import MILES, MilesRegressor, MilesSurvival
    from automil_embedding.witness_subspace import WitnessSubspace, WitnessSubspaceRegressor, WitnessSubspaceSurvival

    every_task = ("classification", "survival", "regression")  # survival and regression by their heads

    # None follows the standard MIL assumption: a bag's mean, its similarity profile and its codes all
    # move when negative instances are added, and negative evidence can lower a score.
    # memory_factor: `python experiments/memory_factors.py`, the larger size's factor x 1.25 (docs/benchmarks.md)
    register(automil.LearnerSpec(
        name="bag-stats", memory_factor=6.5, estimator=BagStats, search_space=spaces.bag_stats_space,
        description="bag statistics (mean/max/min/std) + a scikit-learn classifier chosen by the tuner",
        sparse=True, first_trial=spaces.FIRST_TRIALS["bag-stats"], tasks=every_task,
        estimators={"survival": BagStatsSurvival, "regression": BagStatsRegressor}))
    register(automil.LearnerSpec(
        name="miles", memory_factor=13.0, estimator=MILES, search_space=spaces.miles_space,
        description="MILES: similarity to concept instances + 1-norm SVM; witness through the selected "
                    "concepts (Chen, Bi & Wang 2006)",
        sparse=True, first_trial=spaces.FIRST_TRIALS["miles"], published=published.PUBLISHED["miles"],
        tasks=every_task, estimators={"survival": MilesSurvival, "regression": MilesRegressor}))
    register(automil.LearnerSpec(
        name="mivlad", memory_factor=4.0, estimator=MiVLAD, search_space=spaces.vlad_space,
        description="miVLAD: VLAD codes and cell shares over k-means codewords + linear SVM (Wei, Wu & Zhou 2017)",
        first_trial=spaces.FIRST_TRIALS["mivlad"], published=published.PUBLISHED["mivlad"],
        tasks=every_task, estimators={"survival": MiVLADSurvival, "regression": MiVLADRegressor}))
    register(automil.LearnerSpec(
        name="mifv", memory_factor=7.0, estimator=MiFV, search_space=spaces.codebook_space,
        description="miFV: Fisher vectors over a diagonal Gaussian mixture + linear SVM (Wei, Wu & Zhou 2017)",
        first_trial=spaces.FIRST_TRIALS["mifv"], published=published.PUBLISHED["mifv"],
        tasks=every_task, estimators={"survival": MiFVSurvival, "regression": MiFVRegressor}))
    # Its directions are where one group of bags' instances spread beyond the other's: the classes, or the
    # outcome dichotomized at its median (survival, regression). Its fit holds a d x d matrix per group and one
    # block of bags beside the embeddings; it reads its bags streamed, in two passes linear in the instances.
    # memory_factor measured as the others' (0.63 at 2,000 bags).
    register(automil.LearnerSpec(
        name="witness-subspace", memory_factor=0.8, fit_growth=1.0, estimator=WitnessSubspace,
        search_space=spaces.witness_subspace_space,
        description="witness subspace: tails of bag-centred projections on discriminant directions of the "
                    "instances' covariances + logistic regression (or a survival or regression head)",
        first_trial=spaces.FIRST_TRIALS["witness-subspace"], tasks=every_task,
        estimators={"survival": WitnessSubspaceSurvival, "regression": WitnessSubspaceRegressor}))
