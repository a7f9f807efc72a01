"""The docs kept true by a test: every command and option of the ``automil`` parser is documented, every path
and module the docs cite exists, and the README's layer line states the import contracts CI enforces. A rename
in the code then fails here instead of leaving a page that sends a reader to nothing."""

import argparse
import ast
import fnmatch
import importlib
import importlib.util
import re
import tomllib
from pathlib import Path

from dotted_names import resolves

from automil.cli.main import build_parser
from automil.plugins import BUILTIN_PLUGINS

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# Where the repository's own files live: a cited path under one of these is a claim about this repository.
# Others (/tmp/..., OUT/..., DATASET/LEARNER, another project's src/...) are examples or run outputs.
REPOSITORY_ROOTS = ("automil", "benchmarks", "docs", "experiments", "examples", "plugins", "studies", "tests", ".ci")
# Paths of other projects that the docs cite and that look like ours, with the project they belong to.
# Each must still be cited and must not exist here, so the list cannot outlive its reason.
OTHER_PROJECTS = {"examples/wsi_classification.ipynb": "torchmil"}

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A whole component in capitals or in angle brackets stands for any name: studies/NAME.toml, OUT/<slide>.csv.
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]+\b|<[^>/]+>")
DOTTED = re.compile(r"^(\w+(?:\.\w+)+)")


def _pages() -> dict[Path, str]:
    return {page: page.read_text() for page in PAGES}


def _docs_text() -> str:
    return "\n".join(_pages().values())


def _where(page: Path, text: str, offset: int) -> str:
    return f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, offset) + 1}"


# --- 1. every command and option -------------------------------------------------------------------------


def _commands(parser: argparse.ArgumentParser, path=("automil",)):
    """``(command words, parser)`` for the parser and every sub-parser below it, nested ones included."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


def _mentioned(word: str, text: str) -> bool:
    """Whether ``word`` occurs whole: ``--folds`` is not documented by ``--folds-file``."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def test_every_command_of_the_parser_is_documented():
    text = _docs_text()
    commands = [" ".join(words) for words, _ in _commands(build_parser())][1:]
    assert len(commands) >= 8, f"the walk over the parser found too few commands: {commands}"
    missing = [command for command in commands if not _mentioned(command, text)]
    assert not missing, f"commands no page of README.md or docs/ mentions: {missing}"


def test_every_option_of_every_command_is_documented():
    """An option is documented on a page that mentions its command (the top-level ones on any page); any of
    its spellings will do (aliases count once); ``--help`` is every command's and needs no page."""
    pages = _pages().values()
    missing, seen = [], 0
    for words, parser in _commands(build_parser()):
        command = " ".join(words)
        on = [text for text in pages if len(words) == 1 or _mentioned(command, text)]
        for action in parser._actions:
            spellings = [s for s in action.option_strings if s not in ("-h", "--help")]
            seen += bool(spellings)
            if spellings and not any(_mentioned(s, text) for s in spellings for text in on):
                missing.append(f"{command} {'/'.join(spellings)}")
    assert seen >= 30, f"the walk over the parser found only {seen} options"
    assert not missing, "options on no page of README.md or docs/ that mentions their command:\n" + "\n".join(missing)


# --- 2. every cited path and module ----------------------------------------------------------------------


def _ignored_patterns() -> list[str]:
    lines = (ROOT / ".gitignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith(("#", "!"))]


def _is_output(path: str, patterns: list[str]) -> bool:
    """Whether git ignores ``path`` (a run store such as studies/automil.journal): outputs are made by a run,
    not shipped."""
    for pattern in patterns:
        if pattern.endswith("/"):
            if (path + "/").startswith(pattern) or f"/{pattern}" in f"/{path}/":
                return True
        elif fnmatch.fnmatch(path, pattern) or ("/" not in pattern and fnmatch.fnmatch(Path(path).name, pattern)):
            return True
    return False


def _package_folders() -> set[str]:
    """Names of the folders inside automil/ and plugins/: ``writing/tracker.py`` cites a module by the path
    under its package, as docs/architecture.md does."""
    folders = {p.name for top in ("automil", "plugins") for p in (ROOT / top).rglob("*") if p.is_dir()}
    return folders - {"__pycache__"}


def _package_files() -> list[str]:
    return [p.relative_to(ROOT).as_posix() + ("/" if p.is_dir() else "")
            for top in ("automil", "plugins") for p in (ROOT / top).rglob("*") if "__pycache__" not in p.parts]


def _inline(text: str) -> str:
    """The page with its fenced blocks blanked (line numbers kept), so that only inline spans remain."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def _path_tokens(span: str):
    """The words of a span that look like a relative path: ``python experiments/scale.py run /tmp/x.npz`` gives
    ``experiments/scale.py``; a pytest node (``tests/x.py::test_y``) or a named part (``harness.py: name``) its
    file."""
    for word in span.split():
        word = word.split("::")[0].rstrip(".,;:)").lstrip("(")
        if "/" in word and "://" not in word and not word.startswith(("/", "~", "./", "-")) and "=" not in word:
            yield word


def _cited_paths():
    """``(where, path)`` for each path in an inline span, a fenced block or a relative link of a page."""
    for page, text in _pages().items():
        inline = _inline(text)
        for match in SPAN.finditer(inline):
            for word in _path_tokens(match.group(1)):
                yield _where(page, text, match.start()), word
        for block in FENCE.finditer(text):
            for line_number, line in enumerate(block.group(0).splitlines()):
                offset = block.start() + sum(len(x) + 1 for x in block.group(0).splitlines()[:line_number])
                for word in _path_tokens(line):
                    yield _where(page, text, offset), word
        for match in LINK.finditer(inline):
            target = match.group(1).split("#")[0]
            if target and ":" not in target:
                cited = (page.parent / target).resolve()
                where = _where(page, text, match.start())
                yield where, cited.relative_to(ROOT).as_posix() if cited.is_relative_to(ROOT) else target


def _dead(path: str, folders: set[str], files: list[str], outputs: list[str]) -> bool:
    """Whether ``path`` names a file of this repository that is not there."""
    first = path.split("/")[0]
    if first not in REPOSITORY_ROOTS and first not in folders:
        return False  # not ours: an example, a run output, another project
    if path in OTHER_PROJECTS or _is_output(path, outputs):
        return False
    pattern = PLACEHOLDER.sub("*", path).rstrip("/")
    if next(ROOT.glob(pattern), None) is not None:
        return False
    # under its package: tune/driver.py is automil/tune/driver.py, loop/ is automil/tune/loop/
    return not any(fnmatch.fnmatch(f.rstrip("/"), f"*/{pattern}") for f in files)


def test_every_path_the_docs_cite_exists():
    folders, files, outputs = _package_folders(), _package_files(), _ignored_patterns()
    cited = list(_cited_paths())
    assert any(path == "automil/tune/schedule/budget.py" for _, path in cited), "the path extraction finds nothing"
    dead = sorted({f"{where}: {path}" for where, path in cited if _dead(path, folders, files, outputs)})
    assert not dead, "paths the docs cite that are not in the repository:\n" + "\n".join(dead)


def test_the_other_projects_paths_are_still_cited_and_not_ours():
    text = _docs_text()
    for path, project in OTHER_PROJECTS.items():
        assert f"`{path}`" in text, f"{path} ({project}'s) is no longer cited: drop it from OTHER_PROJECTS"
        assert not (ROOT / path).exists(), f"{path} is now in this repository: drop it from OTHER_PROJECTS"


NAMED = re.compile(r"^([\w/.-]+\.py)(?:::|: )(\w+)$")


def _defined(path: Path) -> set[str]:
    """The functions and classes a module defines, at any depth (``Class::test_method`` names the method)."""
    return {node.name for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}


def test_every_function_the_docs_name_in_a_file_is_there():
    """``tests/x.py::test_y`` or ``harness.py: name`` cites a test or helper by name: a rename leaves the doc
    pointing at nothing. A bare file name is looked for under tests/."""
    cited, dead = 0, []
    for page, text in _pages().items():
        for match in SPAN.finditer(_inline(text)):
            named = NAMED.match(match.group(1))
            if not named:
                continue
            cited += 1
            file, name = named.groups()
            found = [ROOT / file] if (ROOT / file).is_file() else list((ROOT / "tests").rglob(file))
            if len(found) != 1 or name not in _defined(found[0]):
                dead.append(f"{_where(page, text, match.start())}: {file} has no {name} ({len(found)} such files)")
    assert cited, "the extraction found no function named in a file"
    assert not dead, "functions the docs name that their file does not define:\n" + "\n".join(dead)


def _cited_modules():
    """``(where, dotted name, its paragraph, list item or table row up to it)`` for each span that starts with
    automil's or a built-in plugin's name and a dot: ``automil.evaluation.calibrated``,
    ``automil.checks.check_learner(spec)``."""
    packages = ("automil", *BUILTIN_PLUGINS.values())
    for page, text in _pages().items():
        inline = _inline(text)
        for match in SPAN.finditer(inline):
            dotted = DOTTED.match(match.group(1))
            if dotted and dotted.group(1).split(".")[0] in packages:
                item = max(inline.rfind(mark, 0, match.start()) for mark in ("\n\n", "\n- ", "\n|"))
                yield _where(page, text, match.start()), dotted.group(1), inline[item:match.start()]


def test_every_module_the_docs_cite_imports():
    """A name the docs cite as ``automil.x.y`` is a module or an attribute of one; ``automil.<key>`` after
    the word tag in its item or row is an MLflow tag (docs/tracking.md), not a module."""
    cited = list(_cited_modules())
    assert any(name == "automil.evaluation.standardized" for _, name, _ in cited), "the extraction finds nothing"
    dead = sorted({f"{where}: {name}" for where, name, before in cited if not resolves(name)
                   and not (name.count(".") == 1 and re.search(r"\btags?\b", before))})
    assert not dead, "modules or names the docs cite that do not import:\n" + "\n".join(dead)


# A page cites a part of another by its title: [docs/tune.md](docs/tune.md), "The portfolio"; `tune.md`, "Memory".
SECTION = re.compile(r'([\w-]+\.md)`?\)?,?\s+(?:section\s+)?"([^"]+)"')


def _openings(text: str) -> list[str]:
    """The headings of a page and the first words of its lines (a part cited by its opening: "Artifacts of
    the parent run"), without markdown's marks."""
    lines = [re.sub(r"^(#+|-|\*\*|\|)\s*", "", line.strip()) for line in _inline(text).splitlines()]
    return [line.replace("`", "").replace("**", "") for line in lines if line]


def test_every_section_the_docs_cite_exists():
    """A title cited after a page is the start of one of its headings or of a line there, so a heading
    renamed or a part removed fails here."""
    pages = {page.name: _openings(text) for page, text in _pages().items()}
    cited, dead = 0, []
    for page, text in _pages().items():
        for match in SECTION.finditer(_inline(text)):
            name, title = match.group(1), " ".join(match.group(2).replace("`", "").split())
            if name in pages:
                cited += 1
                if not any(opening.startswith(title) for opening in pages[name]):
                    dead.append(f"{_where(page, text, match.start())}: {name}, {title!r}")
    assert cited >= 20, f"the extraction found only {cited} cited sections"
    assert not dead, "sections the docs cite that their page does not have:\n" + "\n".join(dead)


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_to_a_heading_finds_it():
    anchors = {page: {_anchor(h) for h in re.findall(r"^#+\s+(.*)$", _inline(text), re.M)}
               for page, text in _pages().items()}
    linked, dead = 0, []
    for page, text in _pages().items():
        for match in LINK.finditer(_inline(text)):
            target, _, anchor = match.group(1).partition("#")
            if anchor and ":" not in target:
                linked += 1
                if anchor not in anchors.get((page.parent / target).resolve() if target else page, set()):
                    dead.append(f"{_where(page, text, match.start())}: {match.group(1)}")
    assert linked, "the extraction found no link to a heading"
    assert not dead, "links to headings their page does not have:\n" + "\n".join(dead)


# --- 3. the README's layer line against the import contracts ---------------------------------------------

LAYER_LINE = "Arrows run one way:"
STEP = r"(?:\{[\w, ]+\}|\w+)"
CHAIN = re.compile(rf"{STEP}(?:\s*->\s*{STEP})+")


def _derived_contract(sources: list[str] | None = None) -> dict:
    """The contract over ``sources`` that tests/unit/test_guard_rails.py derives from the layout and adds to
    pyproject's when CI checks the imports: over the core (no sources given), or the built-in plugins."""
    spec = importlib.util.spec_from_file_location("guard_rails", ROOT / "tests" / "unit" / "test_guard_rails.py")
    guard_rails = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(guard_rails)
    sources = sources or guard_rails.core_modules()
    found = [c for c in guard_rails.layout_contracts() if sorted(c["source_modules"]) == sorted(sources)]
    assert len(found) == 1, f"tests/unit/test_guard_rails.py derives no one contract over {sources}"
    return found[0]


def _readme_layer_line() -> str:
    paragraphs = [" ".join(p.split()) for p in (ROOT / "README.md").read_text().split("\n\n")]
    lines = [p for p in paragraphs if p.startswith(LAYER_LINE)]
    assert len(lines) == 1, f"README.md should state its layers once, in a paragraph that starts {LAYER_LINE!r}"
    return lines[0]


def _steps(chain: str) -> list[list[str]]:
    """``cli -> {tune, track} -> core`` as ``[["cli"], ["track", "tune"], ["core"]]``."""
    return [sorted(word.strip() for word in step.strip(" {}").split(",")) for step in chain.split("->")]


def _contract_layers() -> tuple[list[list[str]], set[frozenset[str]]]:
    """pyproject's layers contract over the packages in the README's form, and the pairs it keeps apart
    (``a | b``); the contracts inside one package (``containers``) are the layers of its parts."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contracts = [c for c in config["contracts"] if c["type"] == "layers" and not c.get("containers")]
    assert len(contracts) == 1, f"pyproject.toml should hold one layers contract over packages, not {len(contracts)}"
    layers, apart = [], set()
    for layer in contracts[0]["layers"]:
        names = sorted(name.strip().removeprefix("automil.") for name in re.split(r"[|:]", layer))
        layers.append(names)
        if "|" in layer:
            apart |= {frozenset((a, b)) for a in names for b in names if a < b}
    return layers, apart


def test_the_readme_layer_line_states_the_import_contracts():
    """The README's ``cli -> {tune, track} -> core`` is pyproject's layers contract with the core below it,
    where the guard rails' derived contract forbids the core every layer above; ``X and Y never import each
    other`` is an independent layer (``automil.tune | automil.track``)."""
    line = _readme_layer_line()
    chains = [_steps(chain) for chain in CHAIN.findall(line)]
    assert chains, f"no chain of layers (a -> {{b, c}} -> d) in README's {line!r}"
    layers, apart = _contract_layers()
    core = _derived_contract()
    above = {f"automil.{name}" for layer in layers for name in layer}
    assert set(core["forbidden_modules"]) >= above, (
        f"the guard rails forbid the core {core['forbidden_modules']}, not every layer above it {sorted(above)}")
    assert chains[0] == [*layers, ["core"]], (
        f"README.md's layer line says {chains[0]}, the import contracts {[*layers, ['core']]}")
    said_apart = {frozenset(pair) for pair in re.findall(r"(\w+) and (\w+) never import each other", line)}
    assert said_apart == apart, (f"README.md says {sorted(map(sorted, said_apart))} never import each other, "
                                 f"the contracts keep {sorted(map(sorted, apart))} apart")


def test_the_readme_says_plugins_import_the_core_only_as_the_contracts_do():
    line = _readme_layer_line()
    chains = [_steps(chain) for chain in CHAIN.findall(line)]
    assert [["plugins"], ["core"]] in chains, f"README.md's layer line no longer says plugins -> core: {line!r}"
    plugins = _derived_contract(list(BUILTIN_PLUGINS.values()))
    layers, _ = _contract_layers()
    above = {f"automil.{name}" for layer in layers for name in layer}
    assert set(plugins["forbidden_modules"]) >= above, (
        f"README.md says plugins import the core only; the guard rails forbid them only {plugins['forbidden_modules']}")


# --- 4. the plugin page, the index and the code's citations of the docs -----------------------------------

PLUGIN_PAGE = ROOT / "docs" / "plugins.md"
INDEX = ROOT / "docs" / "index.md"


def _hooks() -> list[str]:
    """The hooks ``automil/hookspecs.py`` declares: its functions marked ``@hookspec``."""
    tree = ast.parse((ROOT / "automil" / "hookspecs.py").read_text())
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef)
            and any(isinstance(d, ast.Name) and d.id == "hookspec" for d in node.decorator_list)]


def _sections(text: str) -> dict[str, str]:
    """The page cut at its headings: heading text (without ``#``) -> the text up to the next heading."""
    masked = FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)  # a `#` line in a fence is no heading
    headings = list(re.finditer(r"^#+\s+(.*)$", masked, re.M))
    ends = [h.start() for h in headings[1:]] + [len(text)]
    return {h.group(1).strip(): text[h.end():end] for h, end in zip(headings, ends, strict=True)}


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_every_hook_has_a_heading_with_an_example_on_the_plugin_page():
    """Each hook of automil/hookspecs.py heads a section of docs/plugins.md whose example implements it:
    a hook added without its documentation fails here."""
    hooks = _hooks()
    assert len(hooks) >= 3, f"the walk over automil/hookspecs.py found only {hooks}"
    sections = _sections(PLUGIN_PAGE.read_text())
    missing = []
    for hook in hooks:
        section = next((body for title, body in sections.items() if title.startswith(hook)), None)
        if section is None:
            missing.append(f"{hook}: no heading")
            continue
        examples = [ast.parse(block) for block in _python_blocks(section)]
        implemented = [node for tree in examples for node in ast.walk(tree)
                       if isinstance(node, ast.FunctionDef) and node.name == hook
                       and any(ast.unparse(d) == "automil.hookimpl" for d in node.decorator_list)]
        if not implemented:
            missing.append(f"{hook}: no example marked @automil.hookimpl under its heading")
    assert not missing, "hooks docs/plugins.md does not document:\n" + "\n".join(missing)


def test_the_plugin_page_examples_register_a_working_dataset_and_format(tmp_path, monkeypatch):
    """The examples of register_datasets and register_formats, loaded as a plugin of their own, give a
    dataset ``automil.load_bags`` builds and a format it reads, detected and by an alias."""
    import types

    import automil
    from automil import plugins

    sections = _sections(PLUGIN_PAGE.read_text())
    plugin = types.ModuleType("docs_plugin_example")
    for hook in ("register_datasets", "register_formats"):
        section = next(body for title, body in sections.items() if title.startswith(hook))
        for block in _python_blocks(section):
            exec(compile(block, f"docs/plugins.md ({hook})", "exec"), plugin.__dict__)  # noqa: S102 - our own page
    monkeypatch.setenv("AUTOMIL_LOAD_PLUGINS", "")
    plugins.reset()
    try:
        plugins.plugin_manager().register(plugin, name="docs-example")
        assert automil.load_bags("my-bags").n_bags == 120
        path = tmp_path / "two.tsv"
        path.write_text("#bag-tsv\na\t1\t1.0\t2.0\na\t1\t0.5\t0.1\nb\t0\t3\t4\n")
        bags = automil.load_bags(path)
        assert (bags.n_bags, bags.n_features, list(bags.y)) == (2, 2, [1, 0])
        assert automil.load_bags(path, format="tsv").n_bags == 2
    finally:
        plugins.reset()


def test_the_index_names_every_page():
    """docs/index.md links every page of docs/ (reference/ included), so a new page is findable."""
    linked = {(INDEX.parent / m.group(1).split("#")[0]).resolve() for m in LINK.finditer(INDEX.read_text())}
    pages = {page.resolve() for page in (ROOT / "docs").rglob("*.md")} - {INDEX.resolve()}
    assert len(pages) >= 15, f"the walk over docs/ found only {len(pages)} pages"
    unnamed = sorted(page.relative_to(ROOT).as_posix() for page in pages - linked)
    assert not unnamed, f"pages docs/index.md does not name: {unnamed}"


def test_every_relative_link_of_the_docs_finds_its_file():
    """A link between pages (``[tune.md](../tune.md)``, ``[docs/data.md](docs/data.md)``) resolves to a file
    from the page that holds it."""
    linked, dead = 0, []
    for page, text in _pages().items():
        for match in LINK.finditer(_inline(text)):
            target = match.group(1).split("#")[0]
            if target and ":" not in target:
                linked += 1
                if not (page.parent / target).exists():
                    dead.append(f"{_where(page, text, match.start())}: {match.group(1)}")
    assert linked >= 50, f"the extraction found only {linked} relative links"
    assert not dead, "links to files that are not there:\n" + "\n".join(dead)


# ``(docs/tune.md, "Shareable folds")``, ``docs/tune.md`` ("Budget"), ``docs/tune.md "Budget"`` in a comment.
CODE_CITATION = re.compile(r'docs/([\w/-]+\.md)`{0,2}(?:,\s*|\s+\(?|\s*\()\\?"([^"\\(){}=]{1,80})\\?"')
CODE_CITING = ("automil", "plugins", "studies", "benchmarks", "experiments", "bench", "examples")


def _code_citations():
    """``(where, page, title or None)`` for each ``docs/X.md`` the code, the study files and the scripts name."""
    for top in CODE_CITING:
        for path in sorted((ROOT / top).rglob("*")) if (ROOT / top).is_dir() else []:
            if path.suffix not in (".py", ".toml") or "__pycache__" in path.parts:
                continue
            text = path.read_text()
            for match in re.finditer(r"docs/([\w/-]+\.md)", text):
                where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}"
                cited = CODE_CITATION.match(text, match.start())
                title = " ".join(re.sub(r"\n\s*#", " ", cited.group(2)).split()) if cited else None
                yield where, match.group(1), title


def test_every_page_and_section_the_code_cites_exists():
    """A docstring, comment, help text or error message that sends a reader to ``docs/X.md`` (and a section
    of it by its title) sends them to a page that has it: moving a section fails here until the code is
    pointed at its new page."""
    openings = {page.relative_to(ROOT / "docs").as_posix(): _openings(text) for page, text in _pages().items()
                if page.is_relative_to(ROOT / "docs")}
    cited = list(_code_citations())
    assert len(cited) >= 30 and any(title for _, _, title in cited), "the extraction finds no citation"
    dead = [f"{where}: docs/{page}" + (f", {title!r}" if title else "") for where, page, title in cited
            if page not in openings or (title and not any(o.startswith(title) for o in openings[page]))]
    assert not dead, "pages or sections the code cites that docs/ does not have:\n" + "\n".join(dead)


# --- 5. measurements live on the measurement pages --------------------------------------------------------

# A table cell that is a figure: a decimal number, or a number of seconds or a percentage ("0.79 fail",
# "2.84 (26+16)", "87.2 ± 0.9 (89.2)", "1.48, 1.46 s", "8%"); "1e-3" and "4 (3 COMPLETE, 1 FAIL)" are not.
FIGURE_CELL = re.compile(r"^[~<>]?[-+]?\d[\d,]*(?:\.\d+(?![\w.])|\s?%|\s?s\b)")
# A run's figure in the text: a decimal number of seconds or a decimal percentage ("3.82 s", "83.7 %").
RUN_FIGURE = re.compile(r"(?<![\w.])\d+\.\d+ ?(?:s|%)(?!\w)")
RUN_FIGURES_ALLOWED = 5  # settings and single examples ("back-off from 0.5 s", "abstains on 14.1%")


def _measurement_pages() -> set[Path]:
    """The pages docs/index.md lists under "Measurements"."""
    section = _sections(INDEX.read_text())["Measurements"]
    pages = {(INDEX.parent / m.group(1).split("#")[0]).resolve() for m in LINK.finditer(section)}
    assert len(pages) >= 5, f"docs/index.md's Measurements section names only {pages}"
    return pages


def _measured(text: str) -> tuple[list[str], list[str]]:
    """A page's table rows whose cells after the first are mostly figures (two or more), and its run figures
    in the text; fenced blocks (commands, sample output) left out."""
    rows, figures = [], []
    for line in _inline(text).splitlines():
        figures += RUN_FIGURE.findall(line)
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")][1:]
        if line.lstrip().startswith("|") and cells:
            numbers = sum(bool(FIGURE_CELL.match(cell)) for cell in cells)
            if numbers >= 2 and 2 * numbers >= len(cells):
                rows.append(line.strip())
    return rows, figures


def test_task_and_reference_pages_hold_no_measurements():
    """Figures from runs live on the measurement pages docs/index.md names; every other page of docs/ says
    what was measured and links there. A table of measured numbers, or more than a few run figures
    (``N.N s``, ``N.N %``) in the text, fails here. The rule is a floor, not the whole of it: a table of
    counts, or a figure in words, is left to review."""
    measurement = _measurement_pages()
    pages = [page for page in sorted((ROOT / "docs").glob("*.md")) if page.resolve() not in measurement]
    assert len(pages) >= 10, f"the walk over docs/ found only {len(pages)} task and reference pages"
    found = []
    for page in pages:
        rows, figures = _measured(page.read_text())
        found += [f"{page.relative_to(ROOT)}: a table of measured numbers: {row[:100]}" for row in rows]
        if len(figures) > RUN_FIGURES_ALLOWED:
            found.append(f"{page.relative_to(ROOT)}: {len(figures)} run figures in the text: {figures[:8]}")
    measured_rows = sum(len(_measured(page.read_text())[0]) for page in measurement)
    assert measured_rows >= 100, f"the rule finds only {measured_rows} measured rows on the measurement pages"
    assert not found, "measurements outside the measurement pages (move them, link there):\n" + "\n".join(found)
