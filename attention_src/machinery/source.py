"""The one reader of this project's Python source.

Build machinery, not a lesson. It reads a module's source (never imports it) and
answers: which top-level names does it define and import (relative imports
resolved), which names does each definition read, and -- followed transitively --
which of the project's code can a function, class or module reach. The cache keys
(:mod:`attention_src.machinery.cache`), the reader's copy texts
(``site_tools.copytext``), ``serve``'s page dependencies (``site_tools.deps``) and
the house-rules test all read code through it.
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import symtable
import types
from functools import cache as _memo
from pathlib import Path
from typing import Any

__all__ = [
    "free_names",
    "module_file",
    "reachable_code",
    "code_fingerprint",
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


class _Module:
    """One module of the project: what each top-level name is, and its code."""

    def __init__(self, module: str, path: Path):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        self.imports: dict[
            str, tuple[str, str | None]
        ] = {}  # name -> (module, attr)
        self.definitions: dict[str, str] = {}  # name -> code without docstrings
        self.uses: dict[str, set[str]] = {}  # name -> names its code reads
        self.other = (
            ""  # top-level statements that are neither imports nor definitions
        )
        other = []
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    target = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
                    self.imports[bound] = (target, None)
            elif isinstance(node, ast.ImportFrom):
                origin = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1])
                    origin = f"{base}.{origin}" if origin else base
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = (origin, alias.name)
            elif isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
            ):
                self._define([node.name], node)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = (
                    node.targets if isinstance(node, ast.Assign) else [node.target]
                )
                names = [
                    leaf.id
                    for target in targets
                    for leaf in ast.walk(target)
                    if isinstance(leaf, ast.Name)
                ]
                self._define(names, node)
            elif not (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            ):
                other.append(ast.unparse(node))
        self.other = "\n".join(other)

    def _define(self, names: list[str], node: ast.AST) -> None:
        code = ast.unparse(_Strip().visit(node))
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
        for name in names:
            previous = self.definitions.get(name, "")
            self.definitions[name] = f"{previous}\n{code}" if previous else code
            self.uses[name] = self.uses.get(name, set()) | uses


@_memo
def _read(module: str, stamp: tuple[int, int]) -> _Module:
    return _Module(module, module_file(module))


def _module(module: str) -> _Module | None:
    path = module_file(module)
    if path is None:
        return None
    stat = path.stat()
    return _read(module, (stat.st_mtime_ns, stat.st_size))


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
        out[f"{module}.{name}"] = info.definitions[name]
        for used in sorted(info.uses[name]):
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
