"""The unit tier: in-process tests of plain data (records built by hand, no Optuna study, no worker
process, no MLflow store), marked ``unit`` so that ``pytest -m unit`` runs them alone in seconds."""

import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/unit/" in item.nodeid.replace("\\", "/") or item.nodeid.startswith("unit/"):
            item.add_marker(pytest.mark.unit)
