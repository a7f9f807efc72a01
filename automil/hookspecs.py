"""Every hook a plugin can implement; the narrative and examples live in docs/plugins.md."""

import pluggy

hookspec = pluggy.HookspecMarker("automil")
hookimpl = pluggy.HookimplMarker("automil")


@hookspec
def register_learners(register):
    """Call ``register(LearnerSpec(...))`` once for every learner the plugin adds."""


@hookspec
def register_datasets(register):
    """Call ``register(DatasetSpec(...))`` once for every dataset the plugin adds."""


@hookspec
def register_formats(register):
    """Call ``register(Reader(...))`` once for every file format the plugin adds."""
