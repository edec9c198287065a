"""The one reader of this project's Python source.

Build machinery, not a lesson. It reads a module's source (never imports it) and
answers: which names does it import (relative imports resolved), at the top level
and anywhere in the file; which names does it define, with their source text as
written and their code without docstrings; which names does each definition
read; and -- followed transitively -- which of the project's code a function,
class or module can reach. Everything that reads code goes through it: the cache
keys (:mod:`attention_src.machinery.cache`), the reader's copy texts
(``site_tools.engine.copytext``) and ``serve``'s page dependencies
(``site_tools.engine.deps``).
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import symtable
import types
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "read_module",
    "read_source",
    "ModuleSource",
    "Definition",
    "Imported",
    "free_names",
    "module_file",
    "reachable_code",
    "code_fingerprint",
    "code_shape",
]

PACKAGE_DIR = Path(__file__).resolve().parents[1]
PACKAGE = PACKAGE_DIR.name  # "attention_src"
_BY_NAME = "module:"  # marks a module named in a string


def module_file(module: str) -> Path | None:
    """The source file of a project module (``"attention_src.masks"``), or None."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = PACKAGE_DIR.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


class _Strip(ast.NodeTransformer):
    """Drop docstrings: they cannot change a result."""

    def _body(self, node):
        self.generic_visit(node)
        body = node.body
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _body  # noqa: N815


# The build asks for a block's shape several times (the page's key, the block's
# key, the Chinese edition's parity); a shape is a function of the text alone.
@functools.lru_cache(maxsize=8192)
def code_shape(source: str) -> str:
    """What a piece of code does, without its comments, docstrings or layout.

    Two sources with the same shape run the same statements: the syntax tree
    with every docstring (the module's too) dropped, as text. Code that does not
    parse is its own shape.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    tree = _Strip().visit(tree)
    tree = _Strip()._body(tree)  # the module's docstring
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def free_names(source: str) -> set[str]:
    """Names the source reads but does not bind at top level (builtins excluded)."""
    top = symtable.symtable(source, "<code>", "exec")
    bound = {
        s.get_name()
        for s in top.get_symbols()
        if s.is_assigned() or s.is_imported() or s.is_namespace()
    }
    wanted: set[str] = set()

    def visit(table):
        for symbol in table.get_symbols():
            if symbol.is_referenced() and (table is top or symbol.is_global()):
                wanted.add(symbol.get_name())
        for child in table.get_children():
            visit(child)

    visit(top)
    return {n for n in wanted - bound if not hasattr(builtins, n)}


# --- reading one module -------------------------------------------------------


class Imported(NamedTuple):
    """Where an imported name comes from.

    ``import numpy as np`` binds ``np`` to ``Imported("numpy", None)``;
    ``from .masks import causal_mask`` (in ``attention_src.mha``) binds
    ``causal_mask`` to ``Imported("attention_src.masks", "causal_mask")``.
    """

    module: str  # the module, absolute (relative imports resolved)
    name: str | None  # the attribute imported from it; None for ``import module``


@dataclass(frozen=True)
class Definition:
    """A name a module defines at its top level, and its code.

    A name bound by several top-level statements (``X = ...`` then
    ``X += ...``) has one definition: their texts and code joined in order,
    its ``kind`` and ``position`` those of the first.
    """

    kind: str  # "function", "class" or "assignment"
    source: str  # the statement's text as written, decorators included
    code: str  # the statement without docstrings, comments or formatting
    position: int  # the index of its statement among the module's top-level ones
    uses: frozenset[str]  # the names its code reads (and "module:<m>" per module
    # ``<m>`` of the project named in a string, which it reaches as a whole)


@dataclass(frozen=True)
class ModuleSource:
    """What one module's source imports and defines (see :func:`read_module`)."""

    module: str  # the module's dotted name
    imports: Mapping[str, Imported]  # top-level bound name -> where it comes from
    all_imports: tuple[Imported, ...]  # every import anywhere in the file, in
    # ``ast.walk`` order: ``import a.b`` is ``("a.b", None)``
    definitions: Mapping[str, Definition]  # top-level name -> its definition
    other: str  # top-level statements that neither import nor define, unparsed
    has_future: bool  # it has a ``from __future__ import`` line

    @property
    def uses(self) -> dict[str, frozenset[str]]:
        """Each defined name -> the names its code reads."""
        return {name: d.uses for name, d in self.definitions.items()}


def _imports_of(node: ast.Import | ast.ImportFrom, package: str):
    """``(bound name, Imported)`` for each name of one import statement."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            bound = alias.asname or alias.name.split(".")[0]
            target = alias.name if alias.asname else alias.name.split(".")[0]
            yield bound, Imported(target, None), Imported(alias.name, None)
        return
    origin = node.module or ""
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1])
        origin = f"{base}.{origin}" if origin else base
    for alias in node.names:
        found = Imported(origin, alias.name)
        yield alias.asname or alias.name, found, found


def _defined_names(node: ast.stmt) -> tuple[str | None, list[str]]:
    """(kind, names) a top-level statement defines; (None, []) for other ones."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return "function", [node.name]
    if isinstance(node, ast.ClassDef):
        return "class", [node.name]
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [
            leaf.id
            for target in targets
            for leaf in ast.walk(target)
            if isinstance(leaf, ast.Name)
        ]
        return "assignment", names
    return None, []


def _uses(node: ast.AST, code: str) -> frozenset[str]:
    """What a definition's code reads; ``node`` already without docstrings."""
    uses = free_names(code)
    # A module named in a string (``python -m attention_src.bench ...`` run
    # in a subprocess) is reached as a whole.
    uses |= {
        f"{_BY_NAME}{leaf.value}"
        for leaf in ast.walk(node)
        if isinstance(leaf, ast.Constant)
        and isinstance(leaf.value, str)
        and leaf.value.split(".")[0] == PACKAGE
        and module_file(leaf.value) is not None
    }
    return frozenset(uses)


def read_source(
    source: str, module: str = "__main__", *, is_package: bool = False
) -> ModuleSource:
    """Read the imports and definitions of Python source text.

    Args:
        source: the text of a module (or of a page's code block).
        module: its dotted name, which relative imports are resolved against.
        is_package: whether it is a package's ``__init__.py`` (``from . import``
            then means the package itself, not its parent).

    Raises:
        SyntaxError: when the text is not valid Python.
    """
    tree = ast.parse(source)
    lines = source.splitlines()
    package = module if is_package else module.rsplit(".", 1)[0]
    all_imports = tuple(
        found
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for _, _, found in _imports_of(node, package)
    )
    imports: dict[str, Imported] = {}
    definitions: dict[str, Definition] = {}
    other: list[str] = []
    has_future = False
    for position, node in enumerate(tree.body):
        if isinstance(node, ast.Import | ast.ImportFrom):
            has_future |= isinstance(node, ast.ImportFrom) and (
                node.module == "__future__"
            )
            for bound, binding, _ in _imports_of(node, package):
                imports[bound] = binding
            continue
        kind, names = _defined_names(node)
        if kind is None:
            if not (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            ):
                other.append(ast.unparse(node))
            continue
        first = min(
            [node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]
        )
        text = "\n".join(lines[first - 1 : node.end_lineno])
        code = ast.unparse(_Strip().visit(node))
        uses = _uses(node, code)
        for name in names:
            earlier = definitions.get(name)
            definitions[name] = (
                Definition(kind, text, code, position, uses)
                if earlier is None
                else Definition(
                    earlier.kind,
                    f"{earlier.source}\n{text}",
                    f"{earlier.code}\n{code}",
                    earlier.position,
                    earlier.uses | uses,
                )
            )
    return ModuleSource(
        module,
        types.MappingProxyType(imports),
        all_imports,
        types.MappingProxyType(definitions),
        "\n".join(other),
        has_future,
    )


@functools.cache
def _read(path: str, module: str, stamp: tuple[int, int]) -> ModuleSource:
    return read_source(
        Path(path).read_text(encoding="utf-8"),
        module,
        is_package=Path(path).name == "__init__.py",
    )


def read_module(path: str | Path, module: str) -> ModuleSource:
    """Read the module ``module`` from its file ``path`` (see :func:`read_source`).

    The answer is kept until the file changes (its modification time or size).

    Example:
        >>> from attention_src.machinery import module_file, read_module
        >>> name = "attention_src.masks"
        >>> masks = read_module(module_file(name), name)
        >>> masks.imports["check_positive_int"]
        Imported(module='attention_src.validate', name='check_positive_int')
        >>> masks.definitions["causal_mask"].kind
        'function'
    """
    path = Path(path).resolve()
    stat = path.stat()
    return _read(str(path), module, (stat.st_mtime_ns, stat.st_size))


def _module(module: str) -> ModuleSource | None:
    path = module_file(module)
    return None if path is None else read_module(path, module)


# --- what a piece of code can reach -------------------------------------------


def _resolve(module: str, name: str, seen: set, out: dict[str, str]) -> None:
    """Add what ``name`` means in ``module`` (and all it reaches) to ``out``."""
    if name.startswith(_BY_NAME):
        _whole_module(name.removeprefix(_BY_NAME), seen, out)
        return
    if (module, name) in seen:
        return
    seen.add((module, name))
    info = _module(module)
    if info is None:
        return
    if name in info.definitions:
        definition = info.definitions[name]
        out[f"{module}.{name}"] = definition.code
        for used in sorted(definition.uses):
            _resolve(module, used, seen, out)
        return
    if name in info.imports:
        origin, attr = info.imports[name]
        if attr is None:  # ``import attention_src.x as y``: all of the module
            _whole_module(origin, seen, out)
        elif module_file(f"{origin}.{attr}") is not None:  # a submodule
            _whole_module(f"{origin}.{attr}", seen, out)
        else:
            _resolve(origin, attr, seen, out)


def _whole_module(module: str, seen: set, out: dict[str, str]) -> None:
    info = _module(module)
    if info is None or (module, "*") in seen:
        return
    seen.add((module, "*"))
    out[f"{module}:<top level>"] = info.other
    for name in sorted(info.definitions):
        _resolve(module, name, seen, out)
    for name in sorted(info.imports):
        origin, _ = info.imports[name]
        if origin.split(".")[0] == PACKAGE:
            _resolve(module, name, seen, out)


def _code_object_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_object_names(const)
    return names


def _code_object_text(code: types.CodeType) -> str:
    parts = [code.co_code.hex(), repr(code.co_names), repr(code.co_varnames)]
    for const in code.co_consts:
        parts.append(
            _code_object_text(const)
            if isinstance(const, types.CodeType)
            else repr(const)
        )
    return "|".join(parts)


def reachable_code(*objects: Any) -> dict[str, str]:
    """Every piece of the project's code that ``objects`` can reach.

    ``objects`` are functions, classes or modules of ``attention_src`` (or
    their names: ``"attention_src.masks:causal_mask"``, ``"attention_src.masks"``),
    or functions defined elsewhere (a page, a notebook, a test), whose own code
    and the project code they name are followed. Returns
    ``{"module.name": code}``, code without comments or docstrings.
    """
    out: dict[str, str] = {}
    seen: set = set()
    pending = list(objects)
    visited_ids: set[int] = set()
    while pending:
        obj = pending.pop()
        if id(obj) in visited_ids:
            continue
        visited_ids.add(id(obj))
        if isinstance(obj, str):  # "attention_src.x:name"; "attention_src.x" = all
            module, _, name = obj.partition(":")
            if name:
                _resolve(module, name, seen, out)
            else:
                _whole_module(module, seen, out)
            continue
        if isinstance(obj, types.ModuleType):
            _whole_module(obj.__name__, seen, out)
            continue
        module = getattr(obj, "__module__", None) or ""
        qualname = getattr(obj, "__qualname__", None) or ""
        if module.split(".")[0] == PACKAGE and module_file(module) is not None:
            _resolve(module, qualname.split(".")[0], seen, out)
            continue
        if isinstance(obj, functools.partial):
            pending += [obj.func, *obj.args, *obj.keywords.values()]
            continue
        functions = []
        if isinstance(obj, types.FunctionType | types.MethodType):
            functions = [getattr(obj, "__func__", obj)]
        elif isinstance(obj, type):
            functions = [
                v for v in vars(obj).values() if isinstance(v, types.FunctionType)
            ]
        for fn in functions:  # defined outside the project: follow its code object
            out[f"{module}.{fn.__qualname__}"] = _code_object_text(fn.__code__)
            values = [
                fn.__globals__.get(n)
                for n in sorted(_code_object_names(fn.__code__))
            ]
            values += [cell.cell_contents for cell in fn.__closure__ or ()]
            pending += [
                value
                for value in values
                if isinstance(value, types.ModuleType | type | types.FunctionType)
                or isinstance(value, functools.partial)
            ]
    return dict(sorted(out.items()))


def code_fingerprint(*objects: Any) -> str:
    """A hex digest of :func:`reachable_code` of ``objects``."""
    digest = hashlib.sha256()
    for name, code in reachable_code(*objects).items():
        digest.update(f"{name}\0{code}\0".encode())
    return digest.hexdigest()
