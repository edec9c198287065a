"""The house rules of the code, checked on the source tree.

(a) No import cycles among the project's modules (``attention_src.*``, ``site_tools.*``),
    counting imports inside functions too: a function-local import that only dodges a
    cycle is still the cycle.
(b) A lesson module never imports the benchmark (``attention_src.bench*``), the build
    cache (``attention_src.machinery.cache``) or ``site_tools``: a chapter's code stands on its own.
(c) Every public function and class defined in an ``attention_src`` module is in that
    module's ``__all__``, and every name in every ``__all__`` has an entry in
    ``docs/reference.md``.

Each rule is a function of the tree; the last tests run each one on a small made-up tree
that breaks it, so a rule that could no longer fail fails here.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("attention_src", "site_tools")
REFERENCE = ROOT / "docs" / "reference.md"

# Not lessons: the package's front door, the benchmark (with all its modules), the build
# cache and the input checks every lesson calls. Every other module of attention_src is a
# lesson module.
INFRASTRUCTURE = (
    "attention_src",
    "attention_src.checks",
)
# The rooms beside the lessons (a name here covers its submodules too).
ROOMS = (
    "attention_src.experiments",
    "attention_src.models",
    "attention_src.machinery",
    "attention_src.check",
    "attention_src.bench",
)
# What a lesson module may not import (a name here covers its submodules too).
NOT_FOR_LESSONS = (*ROOMS, "site_tools")
# The chapters' modules as they stand; each must be found, and found to be a lesson.
CHAPTER_MODULES = (
    "attention_src.alibi",
    "attention_src.decoder",
    "attention_src.efficient",
    "attention_src.encoder",
    "attention_src.feed_forward",
    "attention_src.gqa",
    "attention_src.kv_cache",
    "attention_src.masks",
    "attention_src.multi_head",
    "attention_src.plotting",
    "attention_src.positional",
    "attention_src.projections",
    "attention_src.rmsnorm",
    "attention_src.rope",
    "attention_src.scaled_dot_product",
    "attention_src.scaling",
    "attention_src.self_attention",
    "attention_src.seq2seq",
    "attention_src.soft_lookup",
    "attention_src.softmax",
    "attention_src.swiglu",
    "attention_src.windows",
)


def _covers(prefixes, name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


# ------------------------------------------------------------------------- the tree


def discover(root: Path, packages=PACKAGES) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the packages under ``root``."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _longest_known(name: str, known) -> str | None:
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in known:
            return ".".join(parts[:end])
    return None


def imports_of(name: str, path: Path, known) -> set[str]:
    """The project modules that module ``name`` imports anywhere in its file (top level,
    functions, classes), relative imports resolved."""
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                targets.add(_longest_known(alias.name, known))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = name.split(".") if _is_package(path) else name.split(".")[:-1]
                base_parts = package[: len(package) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in known:  # `from pkg import module`
                    targets.add(submodule)
                else:
                    targets.add(_longest_known(base, known))
    targets.discard(None)
    targets.discard(name)
    return targets


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a list of modules, the first repeated at the end) per strongly connected
    group of modules that import each other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)

    cycles = []
    for group in groups:  # a shortest way from the group's first module back to itself
        start, members = group[0], set(group)
        paths = {start: [start]}
        frontier = [start]
        cycle = None
        while frontier and cycle is None:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v] & members):
                    if w == start:
                        cycle = [*paths[v], start]
                        break
                    if w not in paths:
                        paths[w] = [*paths[v], w]
                        nxt.append(w)
                if cycle:
                    break
            frontier = nxt
        cycles.append(cycle)
    return sorted(cycles)


def lesson_modules(modules) -> list[str]:
    return sorted(
        m
        for m in modules
        if _covers(["attention_src"], m) and m not in INFRASTRUCTURE and not _covers(ROOMS, m)
    )


def forbidden_imports(graph, lessons, forbidden=NOT_FOR_LESSONS) -> list[str]:
    return [f"{m} imports {t}" for m in lessons for t in sorted(graph[m]) if _covers(forbidden, t)]


def _literal_all(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return list(ast.literal_eval(node.value))
    return None


def public_definitions(path: Path) -> tuple[list[str], list[str] | None]:
    """(public functions and classes defined at the top of the file, its literal
    ``__all__`` or None)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    defined = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and not node.name.startswith("_")
    ]
    return defined, _literal_all(tree)


def names_missing_from_all(modules: dict[str, Path]) -> list[str]:
    problems = []
    for name, path in sorted(modules.items()):
        defined, exported = public_definitions(path)
        if exported is None:
            if defined:
                problems.append(f"{name} has public names {defined} but no __all__")
            continue
        problems += [
            f"{name}.{d} is public but not in __all__" for d in defined if d not in exported
        ]
    return problems


# ---------------------------------------------------------------------- the reference


def reference_entries(text: str) -> list[tuple[str, list[str] | None]]:
    """``(identifier, members)`` for every ``::: identifier`` line; ``members`` is the
    ``members:`` option of its indented option block when there is one (``[]`` for
    ``members: false``), else None."""
    lines = text.splitlines()
    entries = []
    for i, line in enumerate(lines):
        match = re.match(r":::\s+(\S+)\s*$", line)
        if not match:
            continue
        block = []
        for following in lines[i + 1 :]:
            if following.strip() and not following[:1].isspace():
                break
            block.append(following)
        entries.append((match.group(1), _members_option(block)))
    return entries


def _members_option(block: list[str]) -> list[str] | None:
    for i, line in enumerate(block):
        match = re.match(r"\s*members:\s*(.*?)\s*$", line)
        if not match:
            continue
        value = match.group(1)
        if value in ("false", "False", "[]"):
            return []
        if value.startswith("["):
            return [v.strip().strip("'\"") for v in value.strip("[]").split(",") if v.strip()]
        items = []
        for item in block[i + 1 :]:
            listed = re.match(r"\s*-\s*(\S+)\s*$", item)
            if not listed:
                break
            items.append(listed.group(1).strip("'\""))
        return items
    return None


def _resolve(identifier: str):
    """(module name, object) for a dotted identifier: the longest importable module
    prefix, then attributes."""
    parts = identifier.split(".")
    for end in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        obj = module
        for attr in parts[end:]:
            obj = getattr(obj, attr)
        return ".".join(parts[:end]), obj
    raise ImportError(identifier)


def documented_pairs(text: str) -> tuple[set[tuple[str, str]], list[str]]:
    """(the (module, name) pairs the reference documents, entries that name nothing)."""
    pairs, broken = set(), []
    for identifier, members in reference_entries(text):
        try:
            module_name, obj = _resolve(identifier)
        except (ImportError, AttributeError):
            broken.append(identifier)
            continue
        if module_name == identifier:  # a whole module, with its members
            listed = list(getattr(obj, "__all__", [])) if members is None else members
            pairs |= {(identifier, member) for member in listed}
        else:
            owner, _, attr = identifier.rpartition(".")
            pairs.add((owner, attr))
    return pairs, broken


def undocumented_names(module_names, text: str) -> list[str]:
    """Names in the ``__all__`` of the modules that the reference does not document: not
    under that module, nor as the same object under another."""
    pairs, _ = documented_pairs(text)
    by_name: dict[str, list[object]] = {}
    for owner, attr in pairs:
        try:
            by_name.setdefault(attr, []).append(getattr(importlib.import_module(owner), attr))
        except (ImportError, AttributeError):
            continue
    problems = []
    for name in module_names:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            if not hasattr(module, attr):
                problems.append(f"{name}.__all__ names {attr!r}, which it does not define")
            elif (name, attr) not in pairs and not any(
                obj is getattr(module, attr) for obj in by_name.get(attr, [])
            ):
                problems.append(f"{name}.{attr} has no entry in docs/reference.md")
    return problems


def _modules_with_all(modules: dict[str, Path]) -> list[str]:
    return sorted(m for m, path in modules.items() if public_definitions(path)[1] is not None)


# ------------------------------------------------------------------- the rules, here

MODULES = discover(ROOT)
GRAPH = import_graph(MODULES)
SOURCE = {m: p for m, p in MODULES.items() if _covers(["attention_src"], m)}


def test_the_tree_is_found_and_every_chapter_module_is_a_lesson():
    assert {"attention_src", "attention_src.bench", "site_tools"} <= set(MODULES)
    assert set(CHAPTER_MODULES) <= set(lesson_modules(MODULES))
    assert not set(INFRASTRUCTURE) & set(lesson_modules(MODULES))


def test_no_import_cycles():
    cycles = find_cycles(GRAPH)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_lessons_import_neither_benchmark_nor_cache_nor_site_tools():
    assert forbidden_imports(GRAPH, lesson_modules(MODULES)) == []


def test_every_public_function_and_class_is_in_all():
    assert names_missing_from_all(SOURCE) == []


def test_every_name_in_an_all_has_a_reference_entry():
    assert undocumented_names(_modules_with_all(SOURCE), REFERENCE.read_text("utf-8")) == []


def test_every_reference_entry_names_something():
    assert documented_pairs(REFERENCE.read_text("utf-8"))[1] == []


# ------------------------------------------- each rule fails on a tree that breaks it


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """``make({path: source})`` writes a tree under tmp_path, importable, and returns
    discover()'s map of it; the package is named ``house_fake``."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def make(files):
        _write_tree(tmp_path, files)
        importlib.invalidate_caches()
        return discover(tmp_path, ["house_fake"])

    yield make
    for name in [m for m in sys.modules if _covers(["house_fake"], m)]:
        del sys.modules[name]


def test_cycle_rule_sees_function_local_and_relative_imports(fake_package):
    modules = fake_package(
        {
            "house_fake/__init__.py": "",
            "house_fake/a.py": "from .b import g\n",
            "house_fake/b.py": "def g():\n    from . import a\n",
            "house_fake/sub/__init__.py": "from .. import c\n",
            "house_fake/c.py": "import house_fake.sub\n",
            "house_fake/d.py": "from house_fake import a\n",  # imports a cycle, is in none
        }
    )
    graph = import_graph(modules)
    assert graph["house_fake.b"] == {"house_fake.a"}
    assert graph["house_fake.sub"] == {"house_fake.c"}
    assert find_cycles(graph) == [
        ["house_fake.a", "house_fake.b", "house_fake.a"],
        ["house_fake.c", "house_fake.sub", "house_fake.c"],
    ]
    graph["house_fake.b"] = set()
    assert find_cycles(graph) == [["house_fake.c", "house_fake.sub", "house_fake.c"]]


def test_lesson_rule_sees_an_import_inside_a_function(fake_package):
    modules = fake_package(
        {
            "house_fake/__init__.py": "",
            "house_fake/bench/__init__.py": "",
            "house_fake/bench/timing.py": "",
            "house_fake/lesson.py": "def f():\n    from .bench.timing import x\n",
            "house_fake/other.py": "from house_fake import bench\n",
            "house_fake/fine.py": "from . import lesson\n",
        }
    )
    graph = import_graph(modules)
    lessons = ["house_fake.lesson", "house_fake.other", "house_fake.fine"]
    assert forbidden_imports(graph, lessons, ["house_fake.bench"]) == [
        "house_fake.lesson imports house_fake.bench.timing",
        "house_fake.other imports house_fake.bench",
    ]


def test_all_rule_sees_a_missing_name_and_a_missing_all(fake_package):
    modules = fake_package(
        {
            "house_fake/__init__.py": "",
            "house_fake/good.py": """\
                from math import sqrt

                __all__ = ["Thing", "run"]
                LIMIT = 3


                class Thing: ...


                def run(): ...


                def _private(): ...
            """,
            "house_fake/forgot.py": '__all__ = ["run"]\n\n\ndef run(): ...\n\n\ndef also(): ...\n',
            "house_fake/none.py": "def run(): ...\n",
        }
    )
    assert names_missing_from_all(modules) == [
        "house_fake.forgot.also is public but not in __all__",
        "house_fake.none has public names ['run'] but no __all__",
    ]


def test_reference_rule_matches_entries_by_path_and_by_object(fake_package):
    fake_package(
        {
            "house_fake/__init__.py": "from .lesson import run\n\n__all__ = ['run']\n",
            "house_fake/lesson.py": "__all__ = ['run', 'walk', 'LIMIT']\nLIMIT = 3\n\n\n"
            "def run(): ...\n\n\ndef walk(): ...\n",
            "house_fake/tools.py": "__all__ = ['a', 'b', 'c']\n\n\n"
            "def a(): ...\n\n\ndef b(): ...\n\n\ndef c(): ...\n",
            "house_fake/ghost.py": "__all__ = ['gone']\n",
        }
    )
    reference = textwrap.dedent(
        """\
        # Reference

        ::: house_fake.lesson.run

        ::: house_fake.lesson.LIMIT

        ::: house_fake.tools
            options:
              members:
                - a
                - c

        ::: house_fake.lesson.nothing_here
        """
    )
    modules = ["house_fake", "house_fake.lesson", "house_fake.tools", "house_fake.ghost"]
    assert undocumented_names(modules, reference) == [
        "house_fake.lesson.walk has no entry in docs/reference.md",
        "house_fake.tools.b has no entry in docs/reference.md",
        "house_fake.ghost.__all__ names 'gone', which it does not define",
    ]
    assert documented_pairs(reference)[1] == ["house_fake.lesson.nothing_here"]
    whole_module = "::: house_fake.tools\n\n::: house_fake.lesson.walk\n"
    assert undocumented_names(["house_fake.tools"], whole_module) == []
    assert reference_entries("::: a.b\n    options:\n      members: [x, 'y']\n") == [
        ("a.b", ["x", "y"])
    ]
    assert reference_entries("::: a.b\n    options:\n      members: false\n") == [("a.b", [])]
