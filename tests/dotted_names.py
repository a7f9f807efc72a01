"""Whether a dotted name the docs or a docstring cites (``automil.tune.final.choice.choose``) exists."""

import importlib


def resolves(name: str) -> bool:
    """Whether ``name`` is an importable module, or an attribute reached from the longest one."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False
