"""automil built-in plugin: the SVM family (SIL, mi-SVM, MI-SVM, NSK, sMIL, sbMIL).

Only the hook lives here; the estimators (numba, scikit-learn) are imported when the hook runs, so
``import automil_svm`` stays cheap.
"""

import automil


@automil.hookimpl
def register_learners(register):
    """Register sil, mi-svm, MI-SVM, nsk, smil, sbmil and migraph."""
    from automil import LearnerSpec
    from automil_svm import published, spaces
    from automil_svm.andrews import MISVM, MiSVM
    from automil_svm.migraph import MiGraph
    from automil_svm.nsk import NSK
    from automil_svm.sil import SIL
    from automil_svm.sparse_mil import SBMIL, SMIL

    learners = (
        ("sil", SIL, spaces.sil_space, True,
         "SIL: SVM on instances labelled by their bag; bag score = best instance (Ray & Craven 2005)"),
        ("mi-svm", MiSVM, spaces.instance_kernel_space, True,
         "mi-SVM (lower-case mi): instance-level, maximum pattern margin; relabels instances of positive "
         "bags until stable (Andrews et al. 2002)"),
        ("MI-SVM", MISVM, spaces.instance_kernel_space, True,
         "MI-SVM (upper-case MI): bag-level, maximum bag margin; one witness instance per positive bag "
         "(Andrews et al. 2002)"),
        ("nsk", NSK, spaces.nsk_space, False,
         "NSK: SVM on whole bags with the normalized set kernel; no witness (Gärtner et al. 2002)"),
        ("smil", SMIL, spaces.smil_space, True,
         "sMIL: sparse-bag SVM, positive bag means with relaxed margins 2/|X|-1 (Bunescu & Mooney 2007)"),
        ("sbmil", SBMIL, spaces.sbmil_space, True,
         "sbMIL: sMIL, then an instance SVM with the top eta fraction of positive-bag instances positive "
         "(Bunescu & Mooney 2007)"),
        ("migraph", MiGraph, spaces.kernel_space, False,
         "miGraph: SVM on whole bags with a kernel that weighs each instance by 1 / its degree in the bag's "
         "epsilon-graph (Zhou, Sun & Li 2009)"),
    )
    # standard_mil: the bag score is the maximum instance score (for sMIL its default bag_score="max").
    for name, estimator, space, standard_mil, description in learners:
        register(LearnerSpec(name, estimator, space, description=description, multiclass=True,
                             sparse=estimator.accepts_sparse,
                             standard_mil=standard_mil, first_trial=spaces.FIRST_TRIALS[name],
                             published=published.PUBLISHED.get(name)))
