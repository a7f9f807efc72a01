"""The house's guard rails, run as CI runs them: the import contracts (layers cli -> {tune, track} -> core,
no Optuna in tracking, no MLflow in the driver, plugins on the public API only), the linter, no import
circle, no private name imported across modules, modules of about 400 lines at most, and no trial state
spelled as a string outside the one module that reads Optuna's, no protocol or allocation compared as a
string, no trial attribute key built by hand."""

import ast
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from dotted_names import resolves

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "automil"
MAX_LINES = 400
# The one module over the limit today: the text parser of six bag formats (424 lines); it may not grow.
LONGER = {"automil/data/readers/text.py": 430}


def _run(command):
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed:\n{done.stdout}\n{done.stderr}"


# What a plugin may import besides the package itself: the plugin API of the README.
PUBLIC_MODULES = ("automil.kernels", "automil.spaces", "automil.checks")
ABOVE_THE_CORE = ("automil.cli", "automil.tune", "automil.track")


def core_modules() -> list[str]:
    """Every module and package at the top of ``automil/`` but the command line, the driver and tracking."""
    names = [path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__"]
    names += [path.parent.name for path in PACKAGE.glob("*/__init__.py")]
    return sorted(set(f"automil.{name}" for name in names) - set(ABOVE_THE_CORE))


def layout_contracts() -> list[dict]:
    """The contracts that name modules, derived from the package layout and the built-in plugin table."""
    from automil.plugins import BUILTIN_PLUGINS

    core = core_modules()
    return [
        {"name": "The core imports none of the driver, tracking or the command line", "type": "forbidden",
         # Optuna is allowed: a learner's search space is an Optuna define-by-run function, and the checks run one.
         "source_modules": core, "forbidden_modules": [*ABOVE_THE_CORE, "mlflow"]},
        {"name": "Built-in plugins use only the public API (automil, " + ", ".join(PUBLIC_MODULES) + ")",
         "type": "forbidden", "source_modules": sorted(BUILTIN_PLUGINS.values()), "allow_indirect_imports": "true",
         "forbidden_modules": [*ABOVE_THE_CORE, *(m for m in core if m not in PUBLIC_MODULES)]},
    ]


def _toml(value) -> str:
    return value if value == "true" else json.dumps(value)


def test_import_contracts_hold(tmp_path):
    """pyproject's contracts plus those derived from the layout, over the core and every built-in plugin."""
    pytest.importorskip("importlinter")
    from automil.plugins import BUILTIN_PLUGINS

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    lines = ["[tool.importlinter]", f"root_packages = {_toml(['automil', *sorted(BUILTIN_PLUGINS.values())])}",
             "include_external_packages = true"]
    for contract in [*config["contracts"], *layout_contracts()]:
        lines += ["", "[[tool.importlinter.contracts]]"]
        lines += [f"{key} = {_toml(value)}" for key, value in contract.items()]
    (tmp_path / "contracts.toml").write_text("\n".join(lines) + "\n")
    _run([Path(sys.executable).parent / "lint-imports", "--no-cache", "--config", tmp_path / "contracts.toml"])


def test_the_derived_contracts_cover_every_core_module_and_built_in_plugin():
    from automil.plugins import BUILTIN_PLUGINS

    core = core_modules()
    assert {"automil.bags", "automil.data", "automil.evaluation", "automil.plugins", "automil.records"} <= set(core)
    assert not set(core) & set(ABOVE_THE_CORE)
    plugin_contract = layout_contracts()[1]
    assert set(plugin_contract["source_modules"]) == {init.parent.name for init in
                                                       (ROOT / "plugins").glob("automil_*/__init__.py")}
    assert set(plugin_contract["source_modules"]) == set(BUILTIN_PLUGINS.values())


def _children(package: str) -> set[str]:
    """The modules and sub-packages directly inside ``package`` (``automil.tune`` -> ``driver``, ``final``, ...)."""
    folder = ROOT.joinpath(*package.split("."))
    names = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
    return names | {path.parent.name for path in folder.glob("*/__init__.py")}


def test_every_part_of_the_driver_and_tracking_is_a_layer():
    """A module or sub-package added to ``automil/tune/`` or ``automil/track/`` must take its place in a layers
    contract of pyproject.toml: a part left out would be free to import anything."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layered = {c["containers"][0]: c["layers"] for c in contracts if c["type"] == "layers" and c.get("containers")}
    assert set(layered) == {"automil.tune", "automil.track"}
    for package, layers in layered.items():
        named = [name.strip() for layer in layers for name in layer.split("|")]
        assert len(named) == len(set(named)), f"{package}: a part named in two layers"
        assert set(named) == _children(package), f"{package}: parts and layers differ"


def test_no_import_circle_between_packages():
    """No circle between the sub-packages of one package either (``automil.data`` <-> ``automil.plugins`` was
    one, through function-level imports): a package's modules may import each other, packages one way."""
    pytest.importorskip("grimp")
    imports = _automil_imports()

    def owner(module: str, parent: str) -> str | None:
        if not module.startswith(parent + "."):
            return None
        return parent + "." + module[len(parent) + 1:].split(".")[0]

    parents = {m.rsplit(".", 1)[0] for m in imports if "." in m}
    circles = []
    for parent in sorted(parents):
        edges = {(owner(m, parent), owner(i, parent)) for m, targets in imports.items() for i in targets}
        edges = {(a, b) for a, b in edges if a and b and a != b}
        circles += [f"{a} <-> {b}" for a, b in sorted(edges) if (b, a) in edges and a < b]
    assert not circles, "packages importing each other:\n" + "\n".join(circles)


def test_ruff_finds_nothing():
    pytest.importorskip("ruff")
    _run([sys.executable, "-m", "ruff", "check", "."])


def _automil_imports():
    """``{module: {automil modules it imports}}``, function-level imports included."""
    import grimp

    graph = grimp.build_graph("automil")
    return {m: {i for i in graph.find_modules_directly_imported_by(m) if i.startswith("automil")}
            for m in graph.modules if m.startswith("automil")}


def _assert_no_circle(imports: dict[str, set[str]]):
    """A depth-first walk of ``{module: modules it imports}`` that fails on the first circle, naming it."""
    done, path = set(), []

    def visit(module):
        if module in path:
            raise AssertionError("import circle: " + " -> ".join(path[path.index(module):] + [module]))
        if module in done:
            return
        path.append(module)
        for other in sorted(imports[module]):
            visit(other)
        path.pop()
        done.add(module)

    for module in sorted(imports):
        visit(module)


def test_no_import_circle_inside_automil():
    pytest.importorskip("grimp")
    _assert_no_circle(_automil_imports())


def test_no_import_circle_between_the_experiments():
    """The scripts of experiments/ import their siblings by name (``import cohorts``, in a function too):
    one circle among them (cohorts <-> portfolio) made either script's meaning depend on the other's."""
    scripts = {path.stem: ast.parse(path.read_text()) for path in (ROOT / "experiments").glob("*.py")}
    imports = {name: {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                      for alias in node.names}
               | {node.module.split(".")[0] for node in ast.walk(tree)
                  if isinstance(node, ast.ImportFrom) and node.module and not node.level}
               for name, tree in scripts.items()}
    imports = {name: targets & set(scripts) - {name} for name, targets in imports.items()}
    assert sum(map(len, imports.values())) >= 5, f"the walk found too few sibling imports: {imports}"
    _assert_no_circle(imports)


def test_no_module_imports_a_private_name_of_another():
    offences = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("automil"):
                offences += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}" for a in node.names
                             if a.name.startswith("_") and not a.name.startswith("__")]
    assert not offences, "private names imported across modules:\n" + "\n".join(offences)


def test_no_module_is_over_about_400_lines():
    long = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text().splitlines())
        if lines > LONGER.get(name, MAX_LINES):
            long[name] = lines
    assert not long, f"modules over {MAX_LINES} lines (split them by concept): {long}"


def test_no_optuna_trial_state_is_spelled_as_a_string_outside_its_adapter():
    """Trial states are :class:`automil.records.TrialState`; only ``automil/tune/backend/optuna_trials.py``
    converts Optuna's states, so a bare ``"COMPLETE"`` anywhere else is a state compared by hand."""
    states = {"COMPLETE", "PRUNED", "FAIL", "RUNNING", "WAITING"}
    adapter = PACKAGE / "tune" / "backend" / "optuna_trials.py"
    offences = [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
                for path in sorted(PACKAGE.rglob("*.py")) if path != adapter
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.Constant) and node.value in states]
    assert not offences, "trial states spelled as strings (use automil.records.TrialState):\n" + "\n".join(offences)


def _compared_strings(node: ast.Compare) -> list[str]:
    """The string constants a comparison holds, alone or in a set, tuple or list (``x == "a"``,
    ``x in ("a", "b")``, ``s == {"a"}``)."""
    found = []
    for operand in [node.left, *node.comparators]:
        items = operand.elts if isinstance(operand, ast.Set | ast.Tuple | ast.List) else [operand]
        found += [item.value for item in items if isinstance(item, ast.Constant) and isinstance(item.value, str)]
    return found


def test_no_protocol_or_allocation_is_compared_as_a_bare_string():
    """A run's protocol and allocation are :class:`automil.records.Protocol` and
    :class:`automil.tune.options.Allocation`; ``protocol == "nested"`` is a name spelled by hand."""
    from automil.records.protocol import Protocol
    from automil.tune.options import Allocation

    # "auto" is also a kernel's gamma (automil.kernels), not only a protocol
    names = {member.value for member in [*Protocol, *Allocation]} - {"auto"}
    offences = [f"{path.relative_to(ROOT)}:{node.lineno}: {', '.join(sorted(set(_compared_strings(node)) & names))}"
                for path in sorted(PACKAGE.rglob("*.py"))
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.Compare) and set(_compared_strings(node)) & names]
    assert not offences, "protocol or allocation compared as strings (use the enums):\n" + "\n".join(offences)


def test_no_trial_attribute_key_is_spelled_by_hand():
    """Per-fold keys come from :meth:`automil.records.TrialAttr.fold`, not ``f"fold_{metric}"``."""
    records = PACKAGE / "records" / "trials.py"
    offences = [f"{path.relative_to(ROOT)}:{node.lineno}"
                for path in sorted(PACKAGE.rglob("*.py")) if path != records
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant)
                and str(node.values[0].value).startswith("fold_")]
    assert not offences, "trial attribute keys built by hand (use automil.records.TrialAttr):\n" + "\n".join(offences)


def test_every_cross_reference_in_a_docstring_names_something_that_exists():
    """``:func:`~automil.tune.final.choice.choose``` and its kin must survive a module's move or rename."""
    role = re.compile(r":(?:func|mod|class|meth|data|attr|exc):`~?(automil[A-Za-z0-9_.]*)`")
    stale = [f"{path.relative_to(ROOT)}: {name}"
             for path in sorted([*PACKAGE.rglob("*.py"), *(ROOT / "plugins").rglob("*.py")])
             for name in sorted(set(role.findall(path.read_text()))) if not resolves(name)]
    assert not stale, "cross-references to nothing:\n" + "\n".join(stale)
