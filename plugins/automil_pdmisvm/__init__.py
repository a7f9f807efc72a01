"""automil built-in plugin: pdMISVM, the primal-dual multi-instance SVM (exact, inexact and kernel)."""

import automil


@automil.hookimpl
def register_learners(register):
    """Register pdmisvm, pdmisvm-inexact and pdmisvm-kernel."""
    from automil_pdmisvm import spaces
    from automil_pdmisvm.kernel import KernelPdMISVMClassifier
    from automil_pdmisvm.linear import InexactPdMISVMClassifier, PdMISVMClassifier

    # standard_mil=False: every class (the negative one too) scores a bag by its best instance, so a
    # pattern that only negative bags carry is evidence for the negative class; Raff & Holt's checks
    # for the standard MIL assumption do not hold by construction.
    # The reference code's kernel (gamma=2, ell=1) is nearly the identity on standardized data (3.5);
    # untuned, the learner uses a length scale of sqrt(d) and the exponent 1 (docs/accuracy-pdmisvm.md).
    # memory_factor: `python experiments/memory_factors.py`, the larger size's factor x 1.25 (docs/benchmarks.md)
    register(automil.LearnerSpec(
        name="pdmisvm", memory_factor=5.5, estimator=PdMISVMClassifier, search_space=spaces.linear_space,
        description="primal-dual multi-class MI-SVM (ADMM), exact W-step; linear in bags",
        multiclass=True, sparse=False, standard_mil=False, defaults=spaces.DEFAULTS["pdmisvm"],
        first_trial=spaces.FIRST_TRIALS["pdmisvm"]))
    # One gradient step per iteration needs a small initial penalty, or the constraints freeze W before
    # it has moved: every inexact setting the authors tuned has mu0 <= 1e-5 (docs/algorithms.md 2.6), and
    # untuned accuracy rises by 2 to 13 points over mu0 = 1e-3 (docs/accuracy-pdmisvm.md).
    register(automil.LearnerSpec(
        name="pdmisvm-inexact", memory_factor=5.5, estimator=InexactPdMISVMClassifier,
        search_space=spaces.linear_space,
        description="primal-dual multi-class MI-SVM (ADMM), line-search W-step; linear in bags and features",
        multiclass=True, sparse=False, standard_mil=False, defaults=spaces.DEFAULTS["pdmisvm-inexact"],
        first_trial=spaces.FIRST_TRIALS["pdmisvm-inexact"]))
    # The kernel learner's Gram matrices grow with the square of the instances (it refuses past max_gram_mb):
    # no factor holds at every size; declared is the one measured at its larger size, 40 bags (4,000 instances).
    register(automil.LearnerSpec(
        name="pdmisvm-kernel", memory_factor=1503, estimator=KernelPdMISVMClassifier,
        search_space=spaces.kernel_space,
        description="primal-dual multi-class MI-SVM with a gamma-exponential kernel (small data)",
        multiclass=True, sparse=False, standard_mil=False, defaults=spaces.DEFAULTS["pdmisvm-kernel"],
        first_trial=spaces.FIRST_TRIALS["pdmisvm-kernel"]))
