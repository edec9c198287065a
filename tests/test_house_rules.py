"""The house rules of the code, checked on the source tree.

(a) No import cycles among the project's modules (``attention_src.*``, ``site_tools.*``),
    counting imports inside functions too: a function-local import that only dodges a
    cycle is still the cycle.
(b) The rooms. Every module of ``attention_src`` is in exactly one room: the **lessons**
    (the modules at the top of the package, ``validate`` and ``plotting`` among them),
    **experiments**, **models**, **machinery**, **check**, **bench** (its subpackages),
    or the package's **front door** (its ``__init__``); ``site_tools`` is a room of its
    own. ``MAY_IMPORT`` says which room may import which, counting imports anywhere in a
    file: a lesson imports only lessons, so a chapter's code stands on its own. And
    importing ``attention_src`` imports none of the libraries that read model files
    (gguf, tokenizers, safetensors, transformers): the loaders import them when called.
(c) Every public function and class defined in an ``attention_src`` module is in that
    module's ``__all__``, and every name in every ``__all__`` has an entry in
    ``docs/reference.md``.

Imports are read by the project's one source reader
(:func:`attention_src.machinery.source.read_module`). Each rule is a function of the
tree; the last tests run each one on a small made-up tree that breaks it, so a rule that
could no longer fail fails here.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from attention_src.machinery.source import read_module

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "attention_src"
PACKAGES = (PACKAGE, "site_tools")
REFERENCE = ROOT / "docs" / "reference.md"

# The rooms of attention_src that are subpackages (each covers all its modules).
SUBPACKAGE_ROOMS = ("experiments", "models", "machinery", "check", "bench")
# Which room may import which; a room may always import itself. Only the project's own
# modules count (torch, numpy, ... are not rooms).
MAY_IMPORT = {
    "lessons": set(),  # a chapter's code stands on its own
    "experiments": {"lessons", "machinery"},  # toy tasks and trainings
    "models": {"lessons", "machinery"},  # loaders of real pretrained models
    "machinery": set(),  # the build cache and the source reader: nothing of the project
    "check": {"lessons"},  # the checker of a reader's attention
    "bench": {"lessons"},  # the benchmark
    "front door": {"lessons", "experiments", "models", "machinery"},  # re-exports names
    "site_tools": {"lessons", *SUBPACKAGE_ROOMS, "front door"},  # the site's build: anything
}
# Importing the package must not import these (the loaders import them when called).
MODEL_FILE_LIBRARIES = ("gguf", "tokenizers", "safetensors", "transformers")
# The chapters' modules as they stand; each must be found, and found to be a lesson.
CHAPTER_MODULES = (
    "attention_src.alibi",
    "attention_src.decoder",
    "attention_src.efficient",
    "attention_src.encoder",
    "attention_src.encoder_decoder",
    "attention_src.feed_forward",
    "attention_src.gqa",
    "attention_src.kv_cache",
    "attention_src.latent_attention",
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
    functions, classes), relative imports resolved (read by the project's one source
    reader, :func:`attention_src.machinery.source.read_module`)."""
    targets = set()
    for module, attr in read_module(path, name).all_imports:
        submodule = f"{module}.{attr}"
        if attr is not None and submodule in known:  # `from pkg import module`
            targets.add(submodule)
        else:
            targets.add(_longest_known(module, known))
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


def room_of(module: str, path: Path, package: str = PACKAGE) -> str | None:
    """The room of a module (a key of ``MAY_IMPORT``), or None when it is in none: a
    module of a subpackage that is not a room, or of no package of the project."""
    if module == package:
        return "front door"
    if _covers(["site_tools"], module):
        return "site_tools"
    if not module.startswith(package + "."):
        return None
    parts = module.removeprefix(package + ".").split(".")
    if parts[0] in SUBPACKAGE_ROOMS:
        return parts[0]
    if len(parts) == 1 and not _is_package(path):  # a file at the top of the package
        return "lessons"
    return None


def rooms(modules: dict[str, Path], package: str = PACKAGE) -> dict[str, str | None]:
    """Dotted module name -> its room (None: in no room)."""
    return {m: room_of(m, path, package) for m, path in modules.items()}


def lesson_modules(modules, package: str = PACKAGE) -> list[str]:
    return sorted(m for m, room in rooms(modules, package).items() if room == "lessons")


def room_violations(graph, placed: dict[str, str | None], may_import=MAY_IMPORT) -> list[str]:
    """``"a (room) imports b (room)"`` for each import that ``may_import`` does not allow."""
    problems = []
    for module in sorted(graph):
        room = placed[module]
        if room is None:
            continue
        for target in sorted(graph[module]):
            other = placed.get(target)
            if other is not None and other != room and other not in may_import[room]:
                problems.append(f"{module} ({room}) imports {target} ({other})")
    return problems


def libraries_loaded_by(module: str, libraries, path: Path = ROOT) -> list[str]:
    """The ``libraries`` (top-level names) in ``sys.modules`` after ``import module``
    in a fresh interpreter started in ``path``."""
    code = f"import sys\nimport {module}\nprint(*sorted(sys.modules))"
    env = dict(os.environ, PYTHONPATH=str(path), CUDA_VISIBLE_DEVICES="")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    loaded = {name.split(".")[0] for name in done.stdout.split()}
    return sorted(set(libraries) & loaded)


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
    lessons = set(lesson_modules(MODULES))
    assert {*CHAPTER_MODULES, "attention_src.plotting", "attention_src.validate"} <= lessons


def test_every_module_is_in_one_room():
    """The top of attention_src holds lessons and the subpackages that are rooms."""
    placed = rooms(MODULES)
    assert [m for m, room in placed.items() if room is None] == []
    top = {p.name for p in (ROOT / PACKAGE).iterdir() if (p / "__init__.py").is_file()}
    assert top == set(SUBPACKAGE_ROOMS)
    assert set(placed.values()) == set(MAY_IMPORT)  # the table names every room


def test_no_import_cycles():
    cycles = find_cycles(GRAPH)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_each_room_imports_only_what_it_may():
    assert room_violations(GRAPH, rooms(MODULES)) == []


def test_importing_the_package_imports_no_model_file_library():
    assert libraries_loaded_by(PACKAGE, MODEL_FILE_LIBRARIES) == []


def test_every_public_function_and_class_is_in_all():
    assert names_missing_from_all(SOURCE) == []


def _checker_part(module: str) -> bool:
    """A part of the checker: its __all__ is what it shares with the checker's other parts,
    an internal interface; the reader's API is attention_src.check's own __all__ and the
    two modules the reference documents with it."""
    documented = ("attention_src.check.lang", "attention_src.check.findings")
    return module.startswith("attention_src.check.") and module not in documented


def test_every_name_in_an_all_has_a_reference_entry():
    modules = [m for m in _modules_with_all(SOURCE) if not _checker_part(m)]
    assert undocumented_names(modules, REFERENCE.read_text("utf-8")) == []


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


def test_room_rule_sees_misplaced_imports_and_a_module_in_no_room(fake_package, tmp_path):
    fake_package(
        {
            "house_fake/__init__.py": "from .lesson import f\nfrom .experiments.train import fit\n",
            "house_fake/validate.py": "",
            "house_fake/lesson.py": "from .validate import x\n\n\ndef f():\n"
            "    from .machinery.cache import cached\n",  # a lesson using the cache
            "house_fake/plotting.py": "from house_fake import f\n",  # via the front door
            "house_fake/fine.py": "from . import lesson, validate\n",
            "house_fake/experiments/__init__.py": "",
            "house_fake/experiments/train.py": "from ..machinery.cache import cached\n"
            "from ..models.loader import load\n",  # an experiment reaching a loader
            "house_fake/models/__init__.py": "",
            "house_fake/models/loader.py": "from house_fake import lesson\n"
            "from house_fake.machinery import cache\n",
            "house_fake/machinery/__init__.py": "",
            "house_fake/machinery/cache.py": "import house_fake_tools.hooks\n",
            "house_fake/stray/__init__.py": "",  # a subpackage that is no room
            "house_fake/stray/thing.py": "",
            "house_fake_tools/__init__.py": "",
            "house_fake_tools/hooks.py": "import house_fake\n"
            "from house_fake.models import loader\n",
        }
    )
    modules = discover(tmp_path, ["house_fake", "house_fake_tools"])
    placed = {
        m: "site_tools" if m.startswith("house_fake_tools") else room_of(m, p, "house_fake")
        for m, p in modules.items()
    }
    assert [m for m, room in placed.items() if room is None] == [
        "house_fake.stray",
        "house_fake.stray.thing",
    ]
    assert placed["house_fake.validate"] == placed["house_fake.fine"] == "lessons"
    graph = import_graph(modules)
    assert room_violations(graph, placed) == [
        "house_fake.experiments.train (experiments) imports house_fake.models.loader (models)",
        "house_fake.lesson (lessons) imports house_fake.machinery.cache (machinery)",
        "house_fake.machinery.cache (machinery) imports house_fake_tools.hooks (site_tools)",
        "house_fake.plotting (lessons) imports house_fake (front door)",
    ]
    graph["house_fake.lesson"] = {"house_fake.validate"}  # the import moved to the page
    assert "house_fake.lesson (lessons)" not in " ".join(room_violations(graph, placed))


def test_library_rule_sees_a_library_the_package_imports(fake_package, tmp_path):
    fake_package(
        {
            "house_fake/__init__.py": "from .loader import load\n",
            "house_fake/loader.py": "import house_fake_heavy\n\n\ndef load(): ...\n",
            "house_fake_heavy.py": "",
            "house_fake_light.py": "",
        }
    )
    libraries = ("house_fake_heavy", "house_fake_light")
    assert libraries_loaded_by("house_fake", libraries, tmp_path) == ["house_fake_heavy"]


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
