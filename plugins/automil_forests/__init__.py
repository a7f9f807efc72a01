"""automil built-in plugin: the tree learners MIRF, BLRT and MIDF (docs/algorithms-beyond-svm.md 10-13).

Only the hook lives here; the numba tree builders and estimators load when the learners are asked for.
"""

import automil


@automil.hookimpl
def register_learners(register):
    """Register mirf, blrt and midf."""
    from automil_forests import spaces
    from automil_forests.blrt import BLRTClassifier
    from automil_forests.midf import MIDFClassifier
    from automil_forests.mirf import MIRFClassifier

    # A single ID3-MI tree is not registered: grown to purity it
    # isolates the noise instances of positive bags in pure positive leaves, and one tree has no
    # out-of-bag bags to set its threshold, so it fails the contract's witness-bag accuracy.
    # standard_mil: MIRF scores a bag by the maximum over its instances (10.4), so adding instances never
    # lowers its positive score; BLRT routes by instance fractions and MIDF stacks BLRT, so neither
    # follows the standard MIL assumption.
    # anytime: a fit that runs out of the time the driver gives it keeps the trees grown (forest.grow_in_time)
    # memory_factor: `python experiments/memory_factors.py`, the larger size's factor x 1.25 (docs/benchmarks.md)
    register(automil.LearnerSpec(
        name="mirf", memory_factor=6.5, estimator=MIRFClassifier, search_space=spaces.mirf_space,
        description="MIRF: random forest of ID3-MI trees on bootstrap samples of bags",
        standard_mil=True, first_trial=spaces.FIRST_TRIALS["mirf"], anytime=True))
    register(automil.LearnerSpec(
        name="blrt", memory_factor=3.0, estimator=BLRTClassifier, search_space=spaces.blrt_space,
        description="BLRT: bag-level randomized trees (Komarek & Somol)", first_trial=spaces.FIRST_TRIALS["blrt"],
        anytime=True))
    # fit_growth: from the cost probe's larger sample (6,482 instances) to a fit of the trial (about 49,000) MIDF
    # grew 1.47 on a set no reported run uses (docs/benchmarks-scale.md, "The cost probe's error"), where the growth
    # the probe measures between its samples (1.32) underestimated its trial by a quarter.
    register(automil.LearnerSpec(
        name="midf", memory_factor=6.5, estimator=MIDFClassifier, search_space=spaces.midf_space,
        description="MIDF: cascade of MIRF and BLRT forests (multiple-instance deep forest)",
        first_trial=spaces.FIRST_TRIALS["midf"], fit_growth=1.5))
