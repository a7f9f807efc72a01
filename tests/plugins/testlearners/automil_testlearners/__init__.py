"""Test-only learners for the driver: one that works, one that sleeps, one that crashes, one that records,
one that reports epochs, one that trains until its time runs out, and a plain scikit-learn estimator on
lists of arrays (``plain``: no automil in it).

Installed into a temporary directory by the tests (like any third-party plugin) so that the driver's worker
processes load it exactly as they load real plugins.
"""

import automil


@automil.hookimpl
def register_learners(register):
    from automil_testlearners import learners, outcomes, plain

    register(automil.LearnerSpec(name="centroid", estimator=learners.Centroid,
                                 search_space=learners.centroid_space, first_trial={"shrink": 0.0},
                                 description="nearest class centroid of bag means"))
    register(automil.LearnerSpec(name="onefeature", estimator=learners.OneFeature,
                                 search_space=learners.onefeature_space, first_trial={"feature": 4},
                                 description="a centroid on one feature (its defaults: a noise feature of the "
                                             "test data)"))
    register(automil.LearnerSpec(name="sleepy", estimator=learners.Sleepy,
                                 search_space=learners.sleepy_space,
                                 description="sleeps in fit (and writes its pid first)"))
    register(automil.LearnerSpec(name="crashy", estimator=learners.Crashy,
                                 search_space=learners.centroid_space, description="raises in fit"))
    register(automil.LearnerSpec(name="pruney", estimator=learners.Centroid,
                                 search_space=learners.pruney_space,
                                 description="its search space prunes every trial, giving a reason"))
    register(automil.LearnerSpec(name="misshapen", estimator=learners.Misshapen,
                                 search_space=learners.centroid_space,
                                 description="predicts one label more than there are bags"))
    register(automil.LearnerSpec(name="recorder", estimator=learners.Recorder,
                                 search_space=learners.recorder_space,
                                 description="a centroid that records the bags it is fit on and scores",
                                 first_trial={"shrink": 0.25}))
    register(automil.LearnerSpec(name="quadratic", estimator=learners.Quadratic,
                                 search_space=learners.quadratic_space, first_trial={"seconds_at_1000": 1.2},
                                 description="sleeps in fit for a time quadratic in its instances"))
    register(automil.LearnerSpec(name="cold-quadratic", estimator=learners.ColdQuadratic,
                                 search_space=learners.quadratic_space, first_trial={"seconds_at_1000": 1.2},
                                 description="quadratic, and its first fit in a process costs 2 s more"))
    register(automil.LearnerSpec(name="slow-linear", estimator=learners.Linear,
                                 search_space=learners.quadratic_space, first_trial={"seconds_at_1000": 6.0},
                                 description="sleeps in fit for a time linear in its instances"))
    register(automil.LearnerSpec(name="epochs", estimator=learners.Epochs, search_space=learners.epochs_space,
                                 first_trial={"quality": 0.5},
                                 description="trains in epochs, reporting its quality after each"))
    register(automil.LearnerSpec(name="anytime", estimator=learners.Anytime, search_space=learners.anytime_space,
                                 first_trial={"shrink": 0.0}, anytime=True,
                                 description="trains in epochs until its fit's time runs out"))
    register(automil.LearnerSpec(name="anytime-late", estimator=learners.Anytime, search_space=learners.late_space,
                                 first_trial={"shrink": 0.0}, anytime=True,
                                 description="trains in epochs until its fit's time runs out, learning nothing "
                                             "before far more of them than any budget holds"))
    register(automil.LearnerSpec(name="anytime-over", estimator=learners.Anytime, search_space=learners.over_space,
                                 first_trial={"shrink": 0.0}, anytime=True,
                                 description="trains in epochs until a quarter past its fit's time"))
    register(automil.LearnerSpec(name="hungry", estimator=learners.Centroid, search_space=learners.centroid_space,
                                 memory_factor=1e6, description="a centroid that declares a working set of a "
                                                                "million times its instances"))
    register(automil.LearnerSpec(name="plain", estimator=plain.MeanMaxLogistic, search_space=plain.search_space,
                                 first_trial={"C": 1.0}, multiclass=True,
                                 description="a plain scikit-learn estimator on a list of 2-D arrays"))
    register(automil.LearnerSpec(name="mean-outcome", estimator=outcomes.MeanCox, search_space=outcomes.ridge_space,
                                 tasks=("survival", "regression"), estimators={"regression": outcomes.MeanRidge},
                                 description="a Cox model or a ridge regression of the bags' mean and maximum"))
    register(automil.LearnerSpec(name="constant-outcome", estimator=outcomes.ConstantRisk,
                                 search_space=outcomes.ridge_space, tasks=("survival", "regression"),
                                 estimators={"regression": outcomes.ConstantValue},
                                 description="the same risk, or the mean target, for every bag"))


@automil.hookimpl
def register_datasets(register):
    from automil_testlearners import learners, outcomes

    register(automil.DatasetSpec(name="test-bags", load=learners.make_test_bags, n_bags=48, n_classes=2,
                                 description="48 named bags, class = sign of the bag's mean shift"))
    register(automil.DatasetSpec(name="survival-bags", load=outcomes.make_survival_bags, n_bags=outcomes.N_BAGS,
                                 description="80 bags, exponential event times whose hazard grows "
                                                          "with the share of witness instances, a quarter censored"))
    register(automil.DatasetSpec(name="regression-bags", load=outcomes.make_regression_bags,
                                 n_bags=outcomes.N_BAGS,
                                 description="80 bags, target twice the share of witness instances plus noise"))
    register(automil.DatasetSpec(name="wide-bags", load=learners.make_wide_bags, n_bags=320, n_classes=2,
                                 description="320 bags of 25 instances in 500 features"))
