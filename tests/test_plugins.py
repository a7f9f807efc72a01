"""The plugin system through real installed packages and the real CLI."""

import ast
import importlib
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from driver_support import pip_install

from automil import plugins

REPO = Path(__file__).resolve().parents[1]


def install(package_dir: Path, target: Path):
    pip_install([package_dir], target)


def make_plugin(root: Path, name: str, body: str) -> Path:
    """A throwaway plugin package ``automil-NAME`` with entry point NAME and module ``automil_NAME``."""
    package = root / name
    (package / f"automil_{name}").mkdir(parents=True)
    (package / "pyproject.toml").write_text(textwrap.dedent(f"""
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "automil-{name}"
        version = "1.2.3"
        [project.entry-points.automil]
        {name} = "automil_{name}"
        [tool.setuptools]
        packages = ["automil_{name}"]
    """))
    (package / f"automil_{name}" / "__init__.py").write_text(textwrap.dedent(body))
    return package


def automil(*args, site: Path | None = None, load: str | None = None):
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    if load is None:
        env.pop(plugins.LOAD_PLUGINS_ENV, None)
    else:
        env[plugins.LOAD_PLUGINS_ENV] = load
    return subprocess.run([sys.executable, "-m", "automil.cli", *args], capture_output=True, text=True,
                          env=env, timeout=120)


LEARNER_PLUGIN = """
    import numpy as np
    import automil

    class MeanVote(automil.BagClassifier):
        def __init__(self, shift=0.0):
            self.shift = shift
        def _fit(self, bags, y):
            self.center_ = bags.X.mean(axis=0)
        def _decision_function(self, bags):
            return np.add.reduceat(bags.X - self.center_, bags.offsets[:-1], axis=0)[:, 0] + self.shift

    @automil.hookimpl
    def register_learners(register):
        register(automil.LearnerSpec(name="{learner}", estimator=MeanVote,
                                     search_space=lambda trial: {{}}, description="a throwaway learner"))

    @automil.hookimpl
    def register_datasets(register):
        register(automil.DatasetSpec(name="{dataset}", load=lambda: None, n_bags=3))
"""


def test_installed_plugin_adds_learner_and_dataset_to_the_cli(tmp_path):
    install(make_plugin(tmp_path, "thirdparty", LEARNER_PLUGIN.format(learner="mean-vote",
                                                                      dataset="three-bags")),
            tmp_path / "site")
    learners = automil("learners", site=tmp_path / "site")
    assert learners.returncode == 0, learners.stderr
    row = next(line for line in learners.stdout.splitlines() if line.startswith("mean-vote"))
    assert "thirdparty" in row and "a throwaway learner" in row
    assert re.search(r"^sil\s+svm", learners.stdout, re.M), "built-ins must load next to third parties"
    datasets = automil("datasets", site=tmp_path / "site")
    assert re.search(r"^three-bags\s+thirdparty\s+3", datasets.stdout, re.M), datasets.stdout


def test_load_plugins_variable_restricts_which_plugins_load(tmp_path):
    install(make_plugin(tmp_path, "thirdparty", LEARNER_PLUGIN.format(learner="mean-vote",
                                                                      dataset="three-bags")),
            tmp_path / "site")
    only_third = automil("learners", site=tmp_path / "site", load="thirdparty")
    assert "mean-vote" in only_third.stdout and not re.search(r"^sil\s", only_third.stdout, re.M)
    none = automil("learners", site=tmp_path / "site", load="")
    assert "mean-vote" not in none.stdout and none.returncode == 0


def test_two_plugins_claiming_one_name_is_an_error_naming_both(tmp_path):
    for name in ("first", "second"):
        install(make_plugin(tmp_path, name, LEARNER_PLUGIN.format(learner="twin", dataset=f"d-{name}")),
                tmp_path / "site")
    result = automil("learners", site=tmp_path / "site", load="first,second")
    assert result.returncode == 1
    assert "'twin' is registered twice" in result.stderr
    assert "'first'" in result.stderr and "'second'" in result.stderr
    assert "Traceback" not in result.stderr


def test_broken_plugin_is_reported_by_name_and_the_others_still_load(tmp_path):
    install(make_plugin(tmp_path, "broken", "import not_a_module_anywhere\n"), tmp_path / "site")
    install(make_plugin(tmp_path, "misspelt", """
        import automil
        @automil.hookimpl
        def register_learner(register):
            pass
    """), tmp_path / "site")
    result = automil("learners", site=tmp_path / "site")
    assert result.returncode == 0
    assert "plugin 'broken' was not loaded: ModuleNotFoundError" in result.stderr
    assert "plugin 'misspelt' was not loaded" in result.stderr and "register_learner" in result.stderr
    assert re.search(r"^sil\s+svm", result.stdout, re.M)


def test_example_plugin_template_installs_and_passes_the_contract(tmp_path):
    install(REPO / "examples" / "plugin-template", tmp_path / "site")
    learners = automil("learners", site=tmp_path / "site")
    assert re.search(r"^embedded-meanmax\s+example", learners.stdout, re.M), learners.stderr
    datasets = automil("datasets", site=tmp_path / "site")
    assert re.search(r"^shapes-toy\s+example\s+60\s+277\s+4\s+2\s+yes", datasets.stdout, re.M)
    # the plugin's own tests, as its author runs them: the contract suite and the dataset's declared shape
    template_tests = REPO / "examples" / "plugin-template" / "tests"
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "PYTHONDONTWRITEBYTECODE": "1",
           plugins.LOAD_PLUGINS_ENV: "example,datasets"}
    check = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(template_tests)],
        cwd=template_tests.parent, capture_output=True, text=True, env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    # Every test the template defines ran and passed, none skipped: its contract test once per check that
    # applies to its learner, each of its other test functions once.
    checks = subprocess.run(
        [sys.executable, "-c", "import automil; from automil.checks import learner_checks; "
         "print(len(learner_checks(automil.get_learner('embedded-meanmax'))))"],
        capture_output=True, text=True, env=env, check=True)
    functions = [node.name for path in template_tests.glob("test_*.py") for node in ast.parse(path.read_text()).body
                 if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]
    expected = int(checks.stdout) + len(functions) - 1
    summary = check.stdout.splitlines()[-1].strip("= ")
    assert re.fullmatch(rf"{expected} passed(, \d+ warnings?)? in .*", summary), check.stdout


PLUGIN_PACKAGES = [init.parent for init in sorted((REPO / "plugins").glob("automil_*/__init__.py"))] + [
    REPO / "examples" / "plugin-template" / "automil_example"]


TEMPLATE_SPECS = ("automil.LearnerSpec", "automil.DatasetSpec", "automil.Reader")


@pytest.mark.parametrize("package", PLUGIN_PACKAGES, ids=lambda package: package.name)
def test_every_built_in_plugin_has_the_template_shape(package):
    init = ast.parse((package / "__init__.py").read_text())
    assert ast.get_docstring(init), f"{package.name}/__init__.py has no module docstring"
    hooks = []
    for node in init.body[1:]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        is_hook = isinstance(node, ast.FunctionDef) and "automil.hookimpl" in map(ast.unparse, node.decorator_list)
        assert is_hook and ast.get_docstring(node), (
            f"{package.name}/__init__.py line {node.lineno}: only imports and hooks with a docstring live there")
        hooks.append(node.name)
    registrations = [node for node in ast.walk(init)
                     if isinstance(node, ast.Call) and ast.unparse(node.func) == "register"]
    assert registrations, f"{package.name}/__init__.py registers nothing"
    for call in registrations:
        spec = call.args[0] if len(call.args) == 1 and not call.keywords else None
        assert (isinstance(spec, ast.Call) and ast.unparse(spec.func) in TEMPLATE_SPECS and not spec.args), (
            f"{package.name}/__init__.py line {call.lineno}: register one automil.LearnerSpec, DatasetSpec or "
            "Reader per call, its fields by keyword, as the template does")
    assert ("register_learners" in hooks) == (package / "spaces.py").exists(), (
        f"{package.name}: a plugin with learners keeps their search spaces and first trials in spaces.py")
    for module in sorted(package.glob("*.py")):
        lines = [node.lineno for node in ast.walk(ast.parse(module.read_text()))
                 if isinstance(node, ast.ImportFrom) and node.level]
        assert not lines, f"{module.relative_to(REPO)} imports relatively (lines {lines}): import absolutely"


def test_built_in_learners_take_first_trials_by_name_from_spaces_and_leave_the_seed_to_the_spec():
    registered = {}
    for name, spec in plugins.learners().items():
        registered.setdefault(spec.plugin, {})[name] = spec
    for plugin, specs in registered.items():
        spaces = importlib.import_module(f"{plugins.BUILTIN_PLUGINS[plugin]}.spaces")
        assert spaces.FIRST_TRIALS == {name: spec.first_trial for name, spec in specs.items()}, plugin
        seeded = [name for name, spec in specs.items() if "random_state" in spec.defaults]
        assert not seeded, f"{seeded} set random_state in defaults; LearnerSpec.build seeds it"


def test_published_figures_name_registered_datasets_and_accuracies_in_percent():
    datasets = plugins.datasets()
    cited = {name: spec.published for name, spec in plugins.learners().items() if spec.published is not None}
    assert {"mi-svm", "MI-SVM", "nsk", "miles", "mivlad", "mifv"} <= set(cited)
    for name, published in cited.items():
        assert published.paper and published.accuracy, name
        for dataset, accuracy in published.accuracy.items():
            assert dataset in datasets, f"{name}: published figure for unknown dataset {dataset!r}"
            assert 50 <= accuracy <= 100, f"{name} on {dataset}: {accuracy} is not a binary accuracy in %"


def test_unknown_learner_name_suggests_close_matches(fresh_plugins):
    with pytest.raises(plugins.UnknownNameError, match="did you mean mi-svm"):
        plugins.get_learner("mi-svn")


def test_listing_datasets_imports_no_heavy_dependency():
    code = ("import sys; from automil.cli import main; main(['datasets']); "
            "print('HEAVY', sorted({m.split('.')[0] for m in sys.modules} & {'numba', 'optuna', 'mlflow'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stdout
