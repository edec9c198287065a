"""A shown listing is the computation: its input checks live outside the shown region.

A page includes a region of a lesson module (``--8<-- "attention_src/x.py:name"``), and a
reader reads it line by line. The checks that give the package its clear error messages
stay (and stay tested, in the module's tests), but in a helper outside the region, called
in one line, as ``multi_head.py`` does (its ``mha`` region ends before ``_check_inputs``).

The measure: of a region's code lines (blank, comment and docstring lines aside), the share
that is *inline* validation -- ``raise`` statements and ``if`` blocks whose body only raises.
A one-line call of a check helper is the pattern and does not count. Every listing a Part I
page shows, in either edition, is at most MAX_SHARE inline validation; so is every listing
of every other page.

``python -m tests.test_shown_listings`` prints the share of every listing on every page.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path

from mkdocs.utils.yaml import yaml_load

ROOT = Path(__file__).resolve().parents[1]
MAX_SHARE = 0.10
INCLUDE = re.compile(r'^[ \t]*-?-8<-- "(?P<path>attention_src/[\w/]+\.py):(?P<region>\w+)"', re.M)


def part_one() -> list[str]:
    """The page paths (``chapters/x.md``) of Part I, from the nav of mkdocs.yml."""
    nav = yaml_load((ROOT / "mkdocs.yml").read_bytes())["nav"]
    for entry in nav:
        ((title, value),) = entry.items()
        if title.split("·")[0].strip() == "Part I":
            return [path for item in value for path in item.values()]
    raise AssertionError("mkdocs.yml's nav has no 'Part I' section")


def region(path: str, name: str) -> str:
    """The source between ``# --8<-- [start:name]`` and ``# --8<-- [end:name]``."""
    text = (ROOT / path).read_text("utf-8")
    found = re.search(
        rf"# --8<-- \[start:{name}\]\n(.*?)^[ \t]*# --8<-- \[end:{name}\]", text, re.S | re.M
    )
    assert found, f"{path} has no region {name}"
    return found.group(1)


def _only_raises(body: list[ast.stmt]) -> bool:
    return bool(body) and all(
        isinstance(s, ast.Raise)
        or (
            isinstance(s, ast.If)
            and _only_raises(s.body)
            and (not s.orelse or _only_raises(s.orelse))
        )
        for s in body
    )


def validation_share(source: str) -> tuple[int, int]:
    """``(inline validation lines, code lines)`` of a listing's source."""
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    docstrings.update(range(first.lineno, first.end_lineno + 1))
    code = {
        number
        for number, line in enumerate(source.splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#") and number not in docstrings
    }
    checks: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) or (
            isinstance(node, ast.If)
            and _only_raises(node.body)
            and (not node.orelse or _only_raises(node.orelse))
        ):
            checks.update(range(node.lineno, node.end_lineno + 1))
    return len(checks & code), len(code)


def listings(pages: list[str]) -> dict[tuple[str, str], list[str]]:
    """``{(module path, region): [pages that show it]}`` over both editions."""
    found: dict[tuple[str, str], list[str]] = {}
    for docs in ("docs", "docs-zh"):
        for page in pages:
            markdown = (ROOT / docs / page).read_text("utf-8")
            for m in INCLUDE.finditer(markdown):
                found.setdefault((m["path"], m["region"]), []).append(f"{docs}/{page}")
    return found


# --- the tests -----------------------------------------------------------------------


def test_the_measure_counts_inline_checks_and_not_helper_calls():
    shown = '''
    def f(x, n):
        """Docstring lines do not count."""
        check_positive_int("n", n)  # a one-line helper call: the pattern
        if x.dim() != 2:
            raise ValueError(
                f"x must be 2-D, got {x.dim()}"
            )
        if n > 3:
            n = 3  # not only raising: computation

        return x * n
    '''
    assert validation_share(shown) == (4, 9)
    # the same checks in a helper, called in one line: nothing inline
    called = "def f(x, n):\n    _check_f(x, n)\n    return x * n\n"
    assert validation_share(called) == (0, 3)
    elif_chain = """
    if a:
        raise TypeError("a")
    elif b:
        raise ValueError("b")
    y = 1
    """
    assert validation_share(elif_chain) == (4, 5)


def all_pages() -> list[str]:
    """Every page of the English edition (``chapters/x.md``, ``index.md``, ...)."""
    return sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))


def heavy_listings(pages: list[str]) -> dict[str, str]:
    heavy = {}
    for (path, name), where in listings(pages).items():
        checks, code = validation_share(region(path, name))
        if checks > MAX_SHARE * code:
            heavy[f"{path}:{name}"] = f"{checks} of {code} lines ({', '.join(sorted(set(where)))})"
    return heavy


def test_part_one_listings_are_the_computation():
    """Every listing a Part I page shows is at most MAX_SHARE inline validation."""
    assert listings(part_one()), "no Part I page includes a listing"
    heavy = heavy_listings(part_one())
    assert not heavy, (
        "listings whose shown lines are more than "
        f"{MAX_SHARE:.0%} inline validation (move the checks into a helper outside the "
        f"region, as multi_head.py does): {heavy}"
    )


def test_every_pages_listings_are_the_computation():
    """The same rule on every page of both editions (Parts II-IV, labs, reference)."""
    pages = all_pages()
    assert len(listings(pages)) > len(listings(part_one())), "Parts II-IV include listings"
    heavy = heavy_listings(pages)
    assert not heavy, f"listings over {MAX_SHARE:.0%} inline validation: {heavy}"


if __name__ == "__main__":
    pages = all_pages()
    rows = []
    for (path, name), where in listings(pages).items():
        checks, code = validation_share(region(path, name))
        on = sorted({w.split("/", 1)[1] for w in where})
        rows.append(
            (checks / code, f"{checks:3d}/{code:3d} {checks / code:6.1%}  {path}:{name}  {on}")
        )
    for _, row in sorted(rows, reverse=True):
        print(row)
    sys.exit(0)
