"""automil built-in plugin: deep MIL learners on PyTorch (attention pooling, mi-Net, MI-Net, TransMIL,
DSMIL), installed with ``pip install 'automil[deep]'``; each serves classification, survival and regression.

Only the hook lives here; torch loads when a model is fitted, not when the learners are listed. Without
torch the plugin registers nothing and says how to get it.
"""

import importlib.util

import automil


@automil.hookimpl
def register_learners(register):
    """Register abmil, mi-net, MI-Net, transmil and dsmil when PyTorch is installed."""
    if importlib.util.find_spec("torch") is None:
        # the registry records this as the plugin's load failure, which `automil learners` prints in one line
        raise ModuleNotFoundError("PyTorch is not installed; pip install 'automil[deep]' adds the learners abmil, "
                                  "mi-net, MI-Net, transmil and dsmil")
    from automil_deep import estimators, published, spaces

    # standard_mil stays False: attention, mean pooling and learned embeddings can all weigh negative
    # evidencestimators. An epoch costs in proportion to the instances (whole bags: their sizes stay) and the epochs
    # are bounded: linear growth (fit_growth=1.0), declared, since two small samples' times differ by their
    # early stopping. torch, and torch._dynamo that Adam's first step imports, take seconds to import: in a
    # fit worker's start-up, not inside the first deep fit's fair sharestimators. anytime: a fit ends with the epochs
    # its time allowed (automil.time_left), so a share too short for all its epochs still gives a figurestimators.
    # memory_factor: `python experiments/memory_factors.py`, the larger size's factor x 1.25 (docs/benchmarks.md)
    # Every network serves every task: its pooled bag embedding feeds a task's head (automil_deep.heads).
    tasks = ("classification", "survival", "regression")
    register(automil.LearnerSpec(
        name="abmil", memory_factor=8.5, estimator=estimators.ABMILClassifier, search_space=spaces.abmil_space,
        description="attention-based deep MIL pooling, gated or not (Ilse, Tomczak & Welling 2018)",
        first_trial=spaces.FIRST_TRIALS["abmil"], fit_growth=1.0, anytime=True,
        imports=("torch", "torch._dynamo"),
        published=published.PUBLISHED.get("abmil"), tasks=tasks,
        estimators={"survival": estimators.ABMILSurvival, "regression": estimators.ABMILRegressor}))
    register(automil.LearnerSpec(
        name="mi-net", memory_factor=8.5, estimator=estimators.MiNetClassifier, search_space=spaces.mi_net_space,
        description="mi-Net: instance network, max or mean pooling of instance scores (Wang et al. 2018)",
        first_trial=spaces.FIRST_TRIALS["mi-net"], fit_growth=1.0, anytime=True,
        imports=("torch", "torch._dynamo"),
        published=published.PUBLISHED.get("mi-net"), tasks=tasks,
        estimators={"survival": estimators.MiNetSurvival, "regression": estimators.MiNetRegressor}))
    register(automil.LearnerSpec(
        name="MI-Net", memory_factor=8.5, estimator=estimators.MINetClassifier, search_space=spaces.MI_net_space,
        description="MI-Net: embedding network with pooled instance embeddings, deep supervision (Wang et al. 2018)",
        first_trial=spaces.FIRST_TRIALS["MI-Net"], fit_growth=1.0, anytime=True,
        imports=("torch", "torch._dynamo"),
        published=published.PUBLISHED.get("MI-Net"), tasks=tasks,
        estimators={"survival": estimators.MINetSurvival, "regression": estimators.MINetRegressor}))
    register(automil.LearnerSpec(
        name="transmil", memory_factor=10.5, pair_bytes=estimators.TransMILClassifier.pair_bytes,
        estimator=estimators.TransMILClassifier,        search_space=spaces.training_space, ordered=True,
        description="TransMIL: self-attention over the instances with a class token (Shao et al. 2021)",
        first_trial=spaces.FIRST_TRIALS["transmil"], fit_growth=1.0, anytime=True,
        imports=("torch", "torch._dynamo"),
        published=published.PUBLISHED.get("transmil"), tasks=tasks,
        estimators={"survival": estimators.TransMILSurvival, "regression": estimators.TransMILRegressor}))
    register(automil.LearnerSpec(
        name="dsmil", memory_factor=8.5, estimator=estimators.DSMILClassifier, search_space=spaces.training_space,
        description="DSMIL: dual-stream MIL, critical instance and attention by similarity (Li, Li & Eliceiri 2021)",
        first_trial=spaces.FIRST_TRIALS["dsmil"], fit_growth=1.0, anytime=True,
        imports=("torch", "torch._dynamo"),
        published=published.PUBLISHED.get("dsmil"), tasks=tasks,
        estimators={"survival": estimators.DSMILSurvival, "regression": estimators.DSMILRegressor}))
