"""Misbehaving learners for the fault tests, shipped as a third-party plugin would be.

The well-behaved learners and the ``test-bags`` dataset come from the driver's test plugin
(``automil_testlearners``); these only add faults: a fit that takes a moment (so a signal lands mid-fit),
a fit that leaks memory, and predictions with wrong shapes or non-finite scores.
"""

import automil


@automil.hookimpl
def register_learners(register):
    from automil_faultlearners import learners

    register(automil.LearnerSpec(name="napper", estimator=learners.Napper, search_space=learners.napper_space,
                                 description="sleeps a moment in every fit (and records its pid first)"))
    register(automil.LearnerSpec(name="leaky", estimator=learners.Leaky, search_space=learners.leaky_space,
                                 description="every other trial allocates memory without end"))
    register(automil.LearnerSpec(name="badshape", estimator=learners.BadShape,
                                 search_space=learners.bad_space("short", "wide"),
                                 description="decision_function of the wrong shape"))
    register(automil.LearnerSpec(name="nanscore", estimator=learners.BadShape,
                                 search_space=learners.bad_space("nan", "inf"),
                                 description="decision_function with NaN or inf scores"))
