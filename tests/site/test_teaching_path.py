"""A path without forward references: no chapter's code uses what a later one teaches.

The map is the package's ``__all__``: its names are listed under one comment per
chapter, ``# chapter N: Title``, with N and the title of the chapter's nav entry.
A name belongs to the chapter it is listed under; a name of the package that is not
listed (a module's private helper, a constant) belongs to the earliest chapter that
lists a name of its module. The tools a page may use anywhere are exempt: plotting,
the results cache (``machinery``), the input checks (``validate``), the checker
(``check``) and the benchmark (``bench``).

The check reads what the reader gets: every copy text of a chapter (listings with
the imports their copy adds, exercise solutions included), as the built site
writes them. ``python -m tests.site.test_teaching_path docs/chapters/PAGE.md``
checks one page without a build (it renders the page's Markdown through the run-once
store, as ``python -m site_tools.engine.parallel`` does) and prints what it finds.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "attention_src"
INIT = ROOT / PACKAGE / "__init__.py"
EXEMPT = ("plotting", "machinery", "validate", "check", "bench")
NAV_ENTRY = re.compile(r'^\s*- "(?P<number>\d+)\. (?P<title>[^"]+)": chapters/(?P<stem>[\w-]+)\.md')
CHAPTER_COMMENT = re.compile(r"^\s*# chapter (?P<number>\d+): (?P<title>.+)$")


def nav_chapters() -> dict[str, tuple[int, str]]:
    """``{stem: (number, title)}`` of every numbered chapter of the nav."""
    text = (ROOT / "mkdocs.yml").read_text("utf-8")
    return {
        m["stem"]: (int(m["number"]), m["title"])
        for line in text.splitlines()
        if (m := NAV_ENTRY.match(line))
    }


def registered() -> tuple[dict[str, int], list[tuple[int, str]]]:
    """``({name: chapter}, [(chapter, title) of each comment])`` from ``__all__``."""
    text = INIT.read_text("utf-8")
    start = text.index("__all__ = [")
    body = text[start : text.index("\n]", start)]
    chapters: dict[str, int] = {}
    comments: list[tuple[int, str]] = []
    current = None
    for line in body.splitlines()[1:]:
        if m := CHAPTER_COMMENT.match(line):
            current = int(m["number"])
            comments.append((current, m["title"].strip()))
        elif m := re.match(r'^\s*"(\w+)",', line):
            assert current is not None, f"{m[1]} is listed in __all__ before any chapter comment"
            chapters[m[1]] = current
    return chapters, comments


def defining_modules() -> dict[str, str]:
    """``{name: module}`` for the names of ``__all__``: the module that defines each
    function or class, or, for a constant, the module ``__init__`` imports it from."""
    import attention_src

    tree = ast.parse(INIT.read_text("utf-8"))
    source = {
        alias.asname or alias.name: f"{PACKAGE}.{node.module}"
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
        for alias in node.names
    }
    found = {}
    for name in attention_src.__all__:
        module = getattr(getattr(attention_src, name), "__module__", None)
        found[name] = module if isinstance(module, str) else source[name]
    return found


def chapter_of_modules(chapters: dict[str, int]) -> dict[str, int]:
    """The earliest chapter listing a name of each module."""
    found: dict[str, int] = {}
    for name, module in defining_modules().items():
        if name in chapters:
            found[module] = min(found.get(module, chapters[name]), chapters[name])
    return found


def _same_object(module: str, name: str) -> bool:
    """Whether ``module.name`` is the package's own ``name`` (imported or re-exported)."""
    import importlib

    import attention_src

    try:
        return getattr(importlib.import_module(module), name) is getattr(attention_src, name)
    except (ImportError, AttributeError):
        return False


def imports(code: str) -> list[tuple[str, str]]:
    """``(module, name)`` for every name a block takes from the package: ``from
    attention_src[.sub] import name`` and ``attention_src[.sub].name`` after an
    ``import attention_src[.sub] [as alias]``."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found: list[tuple[str, str]] = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == PACKAGE or node.module.startswith(PACKAGE + "."):
                found += [(node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == PACKAGE or a.name.startswith(PACKAGE + "."):
                    aliases[a.asname or a.name.split(".")[0]] = (a.asname and a.name) or PACKAGE
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts = []
            inner: ast.AST = node
            while isinstance(inner, ast.Attribute):
                parts.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in aliases:
                dotted = [aliases[inner.id], *reversed(parts)]
                # the longest prefix that is a module of the package; the next part is the name
                for cut in range(len(dotted) - 1, 0, -1):
                    module = ".".join(dotted[:cut])
                    if _is_module(module):
                        found.append((module, dotted[cut]))
                        break
    return found


def _is_module(dotted: str) -> bool:
    path = ROOT / Path(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _exempt(module: str, name: str) -> bool:
    if module == PACKAGE:
        module = defining_modules().get(name, f"{PACKAGE}.{name}")
    return module.removeprefix(PACKAGE + ".").split(".")[0] in EXEMPT


def forward_references(stem: str, codes: list[str]) -> list[str]:
    """What the copy texts of chapter ``stem`` take from a later chapter or from no chapter."""
    number = nav_chapters()[stem][0]
    chapters, _ = registered()
    modules = chapter_of_modules(chapters)
    problems = []
    for index, code in enumerate(codes, start=1):
        for module, name in imports(code):
            if _exempt(module, name) or name == "*":
                continue
            if module != PACKAGE and _is_module(f"{module}.{name}"):
                continue  # a submodule imported as a module: its names are checked where used
            if name in chapters and _same_object(module, name):
                home = chapters[name]
            elif module in modules:
                home = modules[module]
            elif module == PACKAGE and f"{module}.{name}" in modules:
                home = modules[f"{module}.{name}"]  # `from attention_src import efficient`
            else:
                problems.append(
                    f"block {index}: {module}.{name} belongs to no chapter "
                    f"(list a name of {module} in __all__ under its chapter)"
                )
                continue
            if home > number:
                problems.append(
                    f"block {index}: {module}.{name} is taught in chapter {home}, "
                    f"after this chapter ({number})"
                )
    return sorted(set(problems), key=problems.index)


def copies_of(site: Path, stem: str) -> list[str]:
    path = site / "_copies" / f"chapters--{stem}.json"
    if not path.exists():
        return []
    return [b["code"] for b in json.loads(path.read_text("utf-8"))["blocks"]]


# --- the tests -----------------------------------------------------------------------


def test_the_chapter_comments_of_all_follow_the_nav():
    """Each ``# chapter N: Title`` of ``__all__`` names a chapter of the nav by its number
    and title, in reading order, so that moving a chapter cannot leave the map stale."""
    nav = {number: title for number, title in nav_chapters().values()}
    _, comments = registered()
    for number, title in comments:
        assert number in nav, f"__all__ has '# chapter {number}', which the nav does not have"
        assert title.casefold() == nav[number].casefold(), (
            f"__all__ says '# chapter {number}: {title}'; the nav's chapter {number} is "
            f"{nav[number]!r}"
        )
    numbers = [n for n, _ in comments]
    assert numbers == sorted(set(numbers)), f"chapter comments out of reading order: {numbers}"


def test_every_module_of_a_listed_name_is_placed():
    """Each name of ``__all__`` is listed under exactly one chapter comment."""
    import attention_src

    chapters, _ = registered()
    assert sorted(chapters) == sorted(attention_src.__all__)


def test_the_check_sees_each_way_of_importing():
    code = (
        "import attention_src as A\n"
        "from attention_src import MultiHeadAttention, plot_attention\n"
        "from attention_src.rope import rotate_pairs\n"
        "from attention_src.machinery import cached\n"
        "y = A.repeat_kv(x, 2)\n"
    )
    found = imports(code)
    assert ("attention_src", "MultiHeadAttention") in found
    assert ("attention_src.rope", "rotate_pairs") in found
    assert ("attention_src", "repeat_kv") in found
    problems = forward_references("masks", [code])
    assert any("MultiHeadAttention" in p for p in problems)
    assert any("repeat_kv" in p for p in problems)
    assert any("rotate_pairs" in p for p in problems)  # a private helper: its module's chapter
    assert not any("plot_attention" in p or "cached" in p for p in problems)  # exempt tools
    assert forward_references("real-decoder", [code]) == []


def test_no_chapter_uses_what_a_later_chapter_teaches(built_site):
    problems = {
        stem: found
        for stem in nav_chapters()
        if (found := forward_references(stem, copies_of(built_site.dir, stem)))
    }
    assert not problems, "\n".join(
        f"{stem}:\n  " + "\n  ".join(found) for stem, found in problems.items()
    )


def _page_codes(page: Path) -> list[str]:
    """The copy texts of one page, read from its Markdown as the build reads them (no build)."""
    from site_tools.engine import program

    return [b["code"] for b in program.copies(program.page_program(page.read_text("utf-8")))]


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        page = Path(arg).resolve()
        found = forward_references(page.stem, _page_codes(page))
        print(f"{page.stem}: " + ("no forward references" if not found else ""))
        for line in found:
            print("  " + line)
