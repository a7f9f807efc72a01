"""automil built-in plugin: deep MIL learners on PyTorch (attention pooling, mi-Net, MI-Net, TransMIL,
DSMIL), installed with ``pip install 'automil[deep]'``.

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
    from automil import LearnerSpec
    from automil_deep import published, spaces
    from automil_deep.estimators import (
        ABMILClassifier,
        DSMILClassifier,
        MINetClassifier,
        MiNetClassifier,
        TransMILClassifier,
    )

    # None claims the standard MIL assumption: attention, mean pooling and learned embeddings can all
    # weigh negative evidence.
    learners = (
        ("abmil", ABMILClassifier, spaces.abmil_space,
         "attention-based deep MIL pooling, gated or not (Ilse, Tomczak & Welling 2018)"),
        ("mi-net", MiNetClassifier, spaces.mi_net_space,
         "mi-Net: instance network, max or mean pooling of instance scores (Wang et al. 2018)"),
        ("MI-Net", MINetClassifier, spaces.MI_net_space,
         "MI-Net: embedding network with pooled instance embeddings, deep supervision (Wang et al. 2018)"),
        ("transmil", TransMILClassifier, spaces.training_space,
         "TransMIL: self-attention over the instances with a class token (Shao et al. 2021)"),
        ("dsmil", DSMILClassifier, spaces.training_space,
         "DSMIL: dual-stream MIL, critical instance and attention by similarity (Li, Li & Eliceiri 2021)"),
    )
    for name, estimator, space, description in learners:
        # An epoch costs in proportion to the instances (whole bags: their sizes stay) and the epochs are
        # bounded: linear growth, declared, since two small samples' times differ by their early stopping.
        # torch, and torch._dynamo that Adam's first step imports, take seconds to import (15 s on a busy
        # machine) and 247 MB: in a fit worker before its first deep fit, not inside that fit's fair share.
        register(LearnerSpec(name, estimator, space, description, first_trial=spaces.FIRST_TRIALS[name],
                             fit_growth=1.0, imports=("torch", "torch._dynamo"),
                             published=published.PUBLISHED.get(name)))
