"""``automil learners`` and ``automil datasets``: what the installed plugins provide."""

from __future__ import annotations

import sys

from automil.cli.common import print_table, subcommand

__all__ = ["add_learners", "add_datasets"]


# ---- automil learners -------------------------------------------------------------------------------
def add_learners(commands):
    subcommand(commands, "learners", _run_learners, "list the registered learners")


def _run_learners(args) -> int:
    from automil import plugins

    registry = plugins.registry("learners")
    rows = [(spec.name, spec.plugin, "yes" if spec.multiclass else "no", "yes" if spec.witness else "no",
             spec.description) for spec in sorted(registry.learners.values(), key=lambda s: s.name.lower())]
    print_table(("learner", "plugin", "multi-class", "witness", "description"), rows)
    _warn_failures(registry)
    return 0


# ---- automil datasets -------------------------------------------------------------------------------
def add_datasets(commands):
    subcommand(commands, "datasets", _run_datasets, "list the registered datasets and whether their files "
                                                      "are available locally")


def _run_datasets(args) -> int:
    from automil import plugins

    registry = plugins.registry("datasets")
    rows = []
    for spec in sorted(registry.datasets.values(), key=lambda s: s.name):
        rows.append((spec.name, spec.plugin, _count(spec.n_bags), _count(spec.n_instances),
                     _count(spec.n_features), _count(spec.n_classes),
                     "yes" if spec.available() else "no (download)"))
    print_table(("dataset", "plugin", "bags", "instances", "features", "classes", "local"), rows)
    _warn_failures(registry)
    return 0


def _count(value) -> str:
    return "?" if value is None else f"{value:,}"


def _warn_failures(registry):
    for name, reason in sorted(registry.failures.items()):
        print(f"automil: warning: plugin {name!r} was not loaded: {reason}", file=sys.stderr)
