"""automil built-in plugin: the SVM family (SIL, mi-SVM, MI-SVM, NSK, sMIL, sbMIL, miGraph).

Only the hook lives here; the estimators (numba, scikit-learn) are imported when the hook runs, so
``import automil_svm`` stays cheap.
"""

import automil


@automil.hookimpl
def register_learners(register):
    """Register sil, mi-svm, MI-SVM, nsk, smil, sbmil and migraph."""
    from automil_svm import published, spaces
    from automil_svm.andrews import MISVM, MiSVM
    from automil_svm.migraph import MiGraph
    from automil_svm.nsk import NSK
    from automil_svm.sil import SIL
    from automil_svm.sparse_mil import SBMIL, SMIL

    # standard_mil: the bag score is the maximum instance score (for sMIL its default bag_score="max");
    # NSK and miGraph score whole bags.
    # memory_factor: `python experiments/memory_factors.py`, the larger size's factor x 1.25 (docs/benchmarks.md)
    register(automil.LearnerSpec(
        name="sil", memory_factor=9.5, estimator=SIL, search_space=spaces.sil_space,
        description="SIL: SVM on instances labelled by their bag; bag score = best instance (Ray & Craven 2005)",
        multiclass=True, sparse=True, standard_mil=True, first_trial=spaces.FIRST_TRIALS["sil"],
        published=published.PUBLISHED.get("sil")))
    register(automil.LearnerSpec(
        name="mi-svm", memory_factor=9.5, estimator=MiSVM, search_space=spaces.instance_kernel_space,
        description="mi-SVM (lower-case mi): instance-level, maximum pattern margin; relabels instances of "
                    "positive bags until stable (Andrews et al. 2002)",
        multiclass=True, sparse=True, standard_mil=True, first_trial=spaces.FIRST_TRIALS["mi-svm"],
        published=published.PUBLISHED.get("mi-svm")))
    register(automil.LearnerSpec(
        name="MI-SVM", memory_factor=4.5, estimator=MISVM, search_space=spaces.instance_kernel_space,
        description="MI-SVM (upper-case MI): bag-level, maximum bag margin; one witness instance per positive "
                    "bag (Andrews et al. 2002)",
        multiclass=True, sparse=True, standard_mil=True, first_trial=spaces.FIRST_TRIALS["MI-SVM"],
        published=published.PUBLISHED.get("MI-SVM")))
    register(automil.LearnerSpec(
        name="nsk", memory_factor=4.0, estimator=NSK, search_space=spaces.nsk_space,
        description="NSK: SVM on whole bags with the normalized set kernel; no witness (Gärtner et al. 2002)",
        multiclass=True, sparse=True, standard_mil=False, first_trial=spaces.FIRST_TRIALS["nsk"],
        published=published.PUBLISHED.get("nsk")))
    register(automil.LearnerSpec(
        name="smil", memory_factor=7.0, estimator=SMIL, search_space=spaces.smil_space,
        description="sMIL: sparse-bag SVM, positive bag means with relaxed margins 2/|X|-1 (Bunescu & Mooney 2007)",
        multiclass=True, sparse=True, standard_mil=True, first_trial=spaces.FIRST_TRIALS["smil"],
        published=published.PUBLISHED.get("smil")))
    register(automil.LearnerSpec(
        name="sbmil", memory_factor=8.5, estimator=SBMIL, search_space=spaces.sbmil_space,
        description="sbMIL: sMIL, then an instance SVM with the top eta fraction of positive-bag instances "
                    "positive (Bunescu & Mooney 2007)",
        multiclass=True, sparse=True, standard_mil=True, first_trial=spaces.FIRST_TRIALS["sbmil"],
        published=published.PUBLISHED.get("sbmil")))
    # miGraph's RBF kernel between bags is reduced 2,048 instance rows at a time against every instance
    # (automil.kernels.combination_gram): linear in the instances, about 35 KB per instance, 138 x 64 float32
    # features at 500 bags (2,000 bags passed the 4 GB cap); declared is the 500 bags' factor.
    register(automil.LearnerSpec(
        name="migraph", memory_factor=173.5, estimator=MiGraph, search_space=spaces.kernel_space,
        description="miGraph: SVM on whole bags with a kernel that weighs each instance by 1 / its degree in the "
                    "bag's epsilon-graph (Zhou, Sun & Li 2009)",
        multiclass=True, sparse=MiGraph.accepts_sparse, standard_mil=False,
        first_trial=spaces.FIRST_TRIALS["migraph"], published=published.PUBLISHED.get("migraph")))
