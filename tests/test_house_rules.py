"""The house rules of the code, checked on the source tree.

(a) No import cycles among the project's modules (``attention_src.*``, ``site_tools.*``),
    counting imports inside functions too: a function-local import that only dodges a
    cycle is still the cycle.
(b) The rooms. Every module of ``attention_src`` is in exactly one room: the **lessons**
    (the modules at the top of the package, ``validate`` and ``plotting`` among them),
    **experiments**, **models**, **machinery**, **check**, **bench** (its subpackages),
    or the package's **front door** (its ``__init__``); ``site_tools`` is a room of its
    own. ``MAY_IMPORT`` says which room may import which, counting imports anywhere in a
    file: a lesson imports only lessons, so a chapter's code stands on its own. The
    table is import-linter's contracts, in ``.importlinter``: each subpackage room
    names who may import it, the front door and site_tools too, and machinery imports
    nothing; here, every module is in a room and every subpackage room has its
    contract. And
    importing ``attention_src`` imports none of the libraries that read model files
    (gguf, tokenizers, safetensors, transformers): the loaders import them when called.
(c) Every public function and class defined in an ``attention_src`` module is in that
    module's ``__all__``, and every name in every ``__all__`` has an entry in
    ``docs/reference.md``.

Imports are read by import-linter's graph (grimp): the contracts run here
(``lint-imports``), and (a) reads the same graph -- import-linter's own contract on
cycles (``acyclic_siblings``) forbids cycles between packages, not between modules, a
stricter rule. Each rule is a function of the tree; the last tests run each one on a small
made-up tree that breaks it (the contracts on a copy of the tree with one forbidden
import each), so a rule that could no longer fail fails here.
"""

from __future__ import annotations

import ast
import configparser
import importlib
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "attention_src"
PACKAGES = (PACKAGE, "site_tools")
REFERENCE = ROOT / "docs" / "reference.md"
CONTRACTS = ROOT / ".importlinter"  # the rooms' table: import-linter's contracts

# The rooms of attention_src that are subpackages (each covers all its modules); which
# room may import which is the table of .importlinter's contracts.
SUBPACKAGE_ROOMS = ("experiments", "models", "machinery", "check", "bench")
ROOMS = {"lessons", *SUBPACKAGE_ROOMS, "front door", "site_tools"}
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


def import_graph(packages=PACKAGES):
    """The project's imports, anywhere in a file (function-local ones too, relative ones
    resolved), as import-linter reads them: a grimp graph of the packages."""
    import grimp  # the test extra's; imported here, as the GPU run collects this file

    return grimp.build_graph(*packages, cache_dir=None)


def find_cycles(graph) -> list[list[str]]:
    """Every import cycle among the graph's modules, once, as its shortest way round from
    its first module (``[a, b, a]``): for each import a -> b, the shortest chain of imports
    from b back to a."""
    cycles = set()
    for a in graph.modules:
        for b in graph.find_modules_directly_imported_by(a):
            back = graph.find_shortest_chain(importer=b, imported=a)
            if back:
                ring = [a, *back[:-1]]
                first = ring.index(min(ring))
                cycles.add((*ring[first:], *ring[:first], min(ring)))
    return sorted(list(cycle) for cycle in cycles)


def room_of(module: str, path: Path, package: str = PACKAGE) -> str | None:
    """The room of a module (one of ``ROOMS``), or None when it is in none: a
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


def protected_rooms(config: str) -> set[str]:
    """The subpackages of attention_src that a ``protected`` contract of the import-linter
    configuration ``config`` protects."""
    parser = configparser.ConfigParser()
    parser.read_string(config)
    found = set()
    for name in parser.sections():
        if name.startswith("importlinter:contract:") and parser[name]["type"] == "protected":
            for module in parser[name]["protected_modules"].split():
                if re.fullmatch(rf"{PACKAGE}\.\w+", module):
                    found.add(module.removeprefix(PACKAGE + "."))
    return found


def lint_imports(tree: Path = ROOT) -> tuple[int, str]:
    """``lint-imports`` with the contracts of :data:`CONTRACTS`, on the packages found in
    ``tree``: (its exit status, its report)."""
    env = dict(os.environ, PYTHONPATH=str(tree), COLUMNS="1000")  # no line wrapped
    code = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    command = [sys.executable, "-c", code, "--config", str(CONTRACTS), "--no-cache", "--no-logo"]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


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
    assert set(placed.values()) == ROOMS
    # each subpackage room has its contract (who may import it), so a new one cannot skip it
    assert protected_rooms(CONTRACTS.read_text("utf-8")) == set(SUBPACKAGE_ROOMS)


def test_no_import_cycles():
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_each_room_imports_only_what_it_may():
    """The contracts of ``.importlinter`` (the rooms' table) are kept."""
    status, report = lint_imports()
    assert status == 0 and " BROKEN" not in report and " KEPT" in report, report


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
    fake_package(
        {
            "house_fake/__init__.py": "",
            "house_fake/a.py": "from .b import g\n",
            "house_fake/b.py": "def g():\n    from . import a\n",
            "house_fake/sub/__init__.py": "from .. import c\n",
            "house_fake/c.py": "import house_fake.sub\n",
            "house_fake/d.py": "from house_fake import a\n",  # imports a cycle, is in none
        }
    )
    graph = import_graph(["house_fake"])
    assert graph.find_modules_directly_imported_by("house_fake.b") == {"house_fake.a"}
    assert graph.find_modules_directly_imported_by("house_fake.sub") == {"house_fake.c"}
    assert find_cycles(graph) == [
        ["house_fake.a", "house_fake.b", "house_fake.a"],
        ["house_fake.c", "house_fake.sub", "house_fake.c"],
    ]
    graph.remove_import(importer="house_fake.b", imported="house_fake.a")
    assert find_cycles(graph) == [["house_fake.c", "house_fake.sub", "house_fake.c"]]


def test_cycle_rule_sees_a_cycle_through_a_package_init(fake_package):
    """The cycle import-linter's ``acyclic_siblings`` does not see: a package's
    ``__init__`` and one of its own modules."""
    fake_package(
        {
            "house_fake/__init__.py": "",
            "house_fake/pkg/__init__.py": "from .inner import VALUE\n",
            "house_fake/pkg/inner.py": "VALUE = 1\n\n\ndef f():\n"
            "    from house_fake.pkg import VALUE\n",
        }
    )
    assert find_cycles(import_graph(["house_fake"])) == [
        ["house_fake.pkg", "house_fake.pkg.inner", "house_fake.pkg"]
    ]


def test_room_rule_sees_a_module_in_no_room_and_a_room_without_its_contract(fake_package, tmp_path):
    fake_package(
        {
            "house_fake/__init__.py": "from .lesson import f\nfrom .experiments.train import fit\n",
            "house_fake/validate.py": "",
            "house_fake/lesson.py": "from .validate import x\n",
            "house_fake/fine.py": "from . import lesson, validate\n",
            "house_fake/experiments/__init__.py": "",
            "house_fake/experiments/train.py": "",
            "house_fake/stray/__init__.py": "",  # a subpackage that is no room
            "house_fake/stray/thing.py": "",
        }
    )
    modules = discover(tmp_path, ["house_fake"])
    placed = {m: room_of(m, p, "house_fake") for m, p in modules.items()}
    assert [m for m, room in placed.items() if room is None] == [
        "house_fake.stray",
        "house_fake.stray.thing",
    ]
    assert placed["house_fake.validate"] == placed["house_fake.fine"] == "lessons"
    assert placed["house_fake"] == "front door"
    assert placed["house_fake.experiments.train"] == "experiments"
    config = CONTRACTS.read_text("utf-8")
    without = re.sub(r"\[importlinter:contract:bench\].*?(?=\n\[|\Z)", "", config, flags=re.S)
    assert protected_rooms(config) - protected_rooms(without) == {"bench"}


# One forbidden import per contract of .importlinter, written into a function of a module
# of a copy of the tree: contract -> (the module, the import, what the contract's report names).
BREAKS = {
    "site-tools": ("attention_src/softmax.py", "import site_tools", "softmax -> site_tools ("),
    "front-door": (
        "attention_src/masks.py",
        "from attention_src import causal_mask",
        "attention_src.masks -> attention_src (",
    ),
    "machinery": (
        "attention_src/machinery/source.py",
        "from attention_src import masks",
        "attention_src.machinery.source -> attention_src.masks (",
    ),
    "experiments": (
        "attention_src/windows.py",
        "from attention_src.experiments import tasks",
        "attention_src.windows -> attention_src.experiments.tasks (",
    ),
    "models": (
        "attention_src/rope.py",
        "import attention_src.models.minilm",
        "attention_src.rope -> attention_src.models.minilm (",
    ),
    "machinery-importers": (
        "attention_src/check/findings.py",
        "from attention_src.machinery import hashing",
        "attention_src.check.findings -> attention_src.machinery.hashing (",
    ),
    "check": (
        "attention_src/bench/timing.py",
        "import attention_src.check.lang",
        "attention_src.bench.timing -> attention_src.check.lang (",
    ),
    "bench": (
        "attention_src/experiments/training.py",
        "from attention_src.bench import timing",
        "attention_src.experiments.training -> attention_src.bench.timing (",
    ),
}


def test_each_contract_fails_on_a_copy_that_breaks_it(tmp_path):
    """A copy of the packages with the imports of :data:`BREAKS`, each inside a function:
    every contract is broken, and its report names its own import. (The tree itself keeps
    every contract, test_the_import_contracts_are_kept: so the copy is what is linted.)"""
    parser = configparser.ConfigParser()
    parser.read_string(CONTRACTS.read_text("utf-8"))
    prefix = "importlinter:contract:"
    names = {
        s.removeprefix(prefix): parser[s]["name"] for s in parser.sections() if s.startswith(prefix)
    }
    assert set(BREAKS) == set(names), "one break per contract"
    for package in PACKAGES:
        ignore = shutil.ignore_patterns("__pycache__", ".ruff_cache")
        shutil.copytree(ROOT / package, tmp_path / package, ignore=ignore)
    for path, line, _ in BREAKS.values():
        module = tmp_path / path
        module.write_text(module.read_text("utf-8") + f"\n\ndef _break():\n    {line}\n", "utf-8")
    status, report = lint_imports(tmp_path)
    assert status == 1, report
    report = report[report.index("Broken contracts") :]
    starts = sorted((report.index(f"\n{name}\n---"), key) for key, name in names.items())
    for (start, key), (end, _) in zip(starts, [*starts[1:], (len(report), "")], strict=True):
        assert BREAKS[key][2] in report[start:end], (key, report[start:end])


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
