"""The plugin manager: built-in plugins, entry points, ``AUTOMIL_LOAD_PLUGINS``, and the registry.

Built-in plugins are packages under ``plugins/``, written like any third-party plugin and loaded by module
name from ``BUILTIN_PLUGINS``, the one place a built-in's name is written (the import contracts and the
contract suite read it). Third-party plugins come through the entry-point group ``automil``. The core's own
file formats register through the same hooks (``automil.data.readers.builtin``). Loading is lazy (on the
first registry call) and happens once per process.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from dataclasses import dataclass, field, replace
from importlib.metadata import entry_points

import pluggy

from automil import hookspecs

ENTRY_POINT_GROUP = "automil"
LOAD_PLUGINS_ENV = "AUTOMIL_LOAD_PLUGINS"
CORE_FORMATS = "automil"  # the plugin name of the built-in readers
# The core's readers, loaded by module name like the built-in plugins: the manager sits below what it loads.
CORE_FORMATS_MODULE = "automil.data.readers.builtin"
BUILTIN_PLUGINS = {
    "datasets": "automil_datasets",
    "svm": "automil_svm",
    "pdmisvm": "automil_pdmisvm",
    "forests": "automil_forests",
    "embedding": "automil_embedding",
    "neighbors": "automil_neighbors",
    "deep": "automil_deep",
}


class UnknownNameError(LookupError):
    """A learner or dataset name that no loaded plugin registered."""


class DuplicateNameError(ValueError):
    """Two plugins registered the same learner or dataset name."""


@dataclass
class Registry:
    """What the loaded plugins registered, plus the plugins that failed and why."""

    learners: dict = field(default_factory=dict)
    datasets: dict = field(default_factory=dict)
    formats: dict = field(default_factory=dict)
    failures: dict = field(default_factory=dict)
    plugins: dict = field(default_factory=dict)  # plugin name -> version


_manager: pluggy.PluginManager | None = None
_registries: dict[str, Registry] = {}


def plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, with every allowed plugin loaded (once)."""
    global _manager
    if _manager is None:
        _manager = _load_plugins()
    return _manager


def reset():
    """Forget loaded plugins and registries (tests, or after installing a plugin in-process)."""
    global _manager
    _manager = None
    _registries.clear()


def _allowed() -> set[str] | None:
    value = os.environ.get(LOAD_PLUGINS_ENV)
    if value is None:
        return None
    return {name.strip() for name in value.split(",") if name.strip()}


def _load_plugins() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("automil")
    pm.add_hookspecs(hookspecs)
    # the core's own readers: not a plugin one can leave out
    pm.register(importlib.import_module(CORE_FORMATS_MODULE), name=CORE_FORMATS)
    pm.load_failures = {}
    pm.plugin_versions = {}
    allowed = _allowed()
    builtin_modules = set(BUILTIN_PLUGINS.values())
    for name, module_name in BUILTIN_PLUGINS.items():
        if allowed is None or name in allowed:
            _guarded_register(pm, name, lambda m=module_name: importlib.import_module(m), "automil")
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.value in builtin_modules or (allowed is not None and ep.name not in allowed):
            continue
        version = ep.dist.version if ep.dist is not None else ""
        _guarded_register(pm, ep.name, ep.load, version)
    _drop_invalid(pm)
    return pm


def _drop_invalid(pm):
    """Unload plugins whose hook functions have unknown (misspelt) names, reporting each by name."""
    while True:
        try:
            pm.check_pending()
            return
        except pluggy.PluginValidationError as error:
            name = pm.get_name(error.plugin)
            pm.unregister(error.plugin)
            pm.plugin_versions.pop(name, None)
            pm.load_failures[name] = str(error)


def _guarded_register(pm, name, load, version):
    """Import one plugin; a broken one is recorded by name and the others still load."""
    if pm.has_plugin(name):
        other = pm.get_plugin(name)
        pm.load_failures[name] = (f"two plugins are named {name!r}: {getattr(other, '__name__', other)} "
                                  "is already loaded")
        return
    try:
        module = load()
        pm.register(module, name=name)
    except Exception as error:  # noqa: BLE001 - any failure of third-party code is reported, not fatal
        pm.load_failures[name] = f"{type(error).__name__}: {error}"
        if os.environ.get("AUTOMIL_DEBUG"):
            traceback.print_exc(file=sys.stderr)
        return
    pm.plugin_versions[name] = version


def registry(kind: str) -> Registry:
    """Call one registration hook on every plugin and collect the specs; ``kind`` is 'learners', 'datasets'
    or 'formats'. Two plugins claiming one name raise ``ValueError`` naming both."""
    if kind in _registries:
        return _registries[kind]
    pm = plugin_manager()
    result = Registry(failures=dict(pm.load_failures), plugins=dict(pm.plugin_versions))
    specs = getattr(result, kind)
    hook = getattr(pm.hook, f"register_{kind}")
    for impl in hook.get_hookimpls():
        plugin_name = impl.plugin_name

        def register(spec, plugin_name=plugin_name):
            if spec.name in specs:
                raise DuplicateNameError(f"{kind[:-1]} name {spec.name!r} is registered twice: by plugin "
                                 f"{specs[spec.name].plugin!r} and by plugin {plugin_name!r}")
            specs[spec.name] = replace(spec, plugin=plugin_name)

        try:
            impl.function(register=register)
        except DuplicateNameError:
            raise
        except Exception as error:  # noqa: BLE001
            result.failures[plugin_name] = f"register_{kind} failed: {type(error).__name__}: {error}"
    _registries[kind] = result
    return result


def _lookup(kind: str, name: str):
    specs = getattr(registry(kind), kind)
    if name in specs:
        return specs[name]
    import difflib

    close = difflib.get_close_matches(name, list(specs), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(sorted(specs)) or 'none'}"
    raise UnknownNameError(f"unknown {kind[:-1]} {name!r}{hint}")


def learners() -> dict:
    """Every registered learner, ``{name: LearnerSpec}``."""
    return dict(registry("learners").learners)


def datasets() -> dict:
    """Every registered dataset, ``{name: DatasetSpec}``."""
    return dict(registry("datasets").datasets)


def get_learner(name: str):
    """The ``LearnerSpec`` registered as ``name``; ``UnknownNameError`` with suggestions otherwise."""
    return _lookup("learners", name)


def get_dataset(name: str):
    """The ``DatasetSpec`` registered as ``name``; ``UnknownNameError`` with suggestions otherwise."""
    return _lookup("datasets", name)
