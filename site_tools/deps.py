"""Which pages an edit in ``attention_src`` makes stale, and which of them first.

A page depends on the package code it can reach: what its code blocks import
from ``attention_src`` and the regions it includes (``--8<--``), followed
through the package with the same reading of the source that keys the build
cache (:func:`attention_src.machinery.source.reachable_code`). Each page gets two
fingerprints:

- ``listings``: the text of the regions it includes -- it changes when an edit
  is *shown* on the page;
- ``code``: everything the page reaches, ``site_tools`` included -- it changes
  when an edit can change what the page prints;
- ``runs``: the same without the listings' text -- what the page's blocks
  execute (the store of executed outputs keys on it: a reworded docstring in a
  listing changes the page, not what its blocks print);
- ``data``: the bytes of the files of ``docs/data`` that the page's code or the
  package code it reaches names (``benchmark-cpu.json``).

Under ``mkdocs serve --dirty`` the hooks rebuild, after a code edit, first the
pages whose listings changed (the page that shows the edited function is
served within seconds), then, in a second build they trigger at once, every
other page whose code fingerprint changed. Nothing else is rebuilt, and no
page that depends on the edit is left stale.
"""

from __future__ import annotations

import hashlib
import json
import re
import textwrap
from pathlib import Path

from attention_src.machinery.source import PACKAGE, reachable_code, read_source

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data"
INCLUDE = re.compile(r'--8<--\s+"(?P<path>attention_src/[\w/]+\.py):(?P<region>[\w-]+)"')
# site_tools modules that no page's block runs through and that do not decide what a
# block prints (they act on a page's Markdown or HTML around its blocks, or run copies
# in tests): editing them re-executes nothing.
NOT_RUN_BY_PAGES = {
    "copyrun.py",
    "deps.py",  # computes the keys; what it finds is in them
    "engine_compare.py",  # reads two built sites
    "hooks.py",
    "i18n.py",
    "live_hooks.py",  # live_small.py is not here: the pages' widget blocks import it
    "measure.py",
    "numbering.py",
}
# A Python fence, at the left margin or indented: a block folded in a "Going further"
# detour or an exercise's solution is as much a part of the page's program.
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```python[^\n]*\n(?P<code>.*?)^(?P=indent)```",
    re.MULTILINE | re.DOTALL,
)


def _region(path: str, region: str) -> str:
    source = ROOT / path
    if not source.is_file():  # a path named in prose, not an include
        return ""
    text = source.read_text(encoding="utf-8")
    found = re.search(
        rf"# --8<-- \[start:{re.escape(region)}\]\n(?P<body>.*?)"
        rf"^\s*# --8<-- \[end:{re.escape(region)}\]",
        text,
        re.MULTILINE | re.DOTALL,
    )
    return found["body"] if found else ""


def _code_cells(source: Path) -> list[str]:
    text = source.read_text(encoding="utf-8")
    if source.suffix == ".ipynb":
        cells = json.loads(text)["cells"]
        return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return _fences(text)


def _fences(markdown: str) -> list[str]:
    return [textwrap.dedent(m["code"]) for m in FENCE.finditer(markdown)]


def _imported(code: str) -> list[str]:
    """``"module:name"`` or ``"module"`` for each project import in the code."""
    try:
        found = read_source(code).all_imports
    except SyntaxError:  # a listing placeholder or a deliberately broken block
        return []
    return [
        f"{module}:{name}" if name is not None else module
        for module, name in found
        if module.split(".")[0] == PACKAGE
    ]


def page_fingerprints(source: Path) -> dict[str, str]:
    """``{"listings", "code", "runs", "data"}`` for one page (markdown or notebook)."""
    text = source.read_text(encoding="utf-8")
    return _fingerprints(text, _code_cells(source))


def markdown_fingerprints(markdown: str) -> dict[str, str]:
    """:func:`page_fingerprints` of a page's Markdown text."""
    return _fingerprints(markdown, _fences(markdown))


def _fingerprints(text: str, cells: list[str]) -> dict[str, str]:
    listings = hashlib.sha256()
    targets: list[str] = []
    for match in INCLUDE.finditer(text):
        body = _region(match["path"], match["region"])
        listings.update(f"{match[0]}\0{body}\0".encode())
        module = match["path"][:-3].replace("/", ".")
        targets += [f"{module}:{name}" for name in _defined(body)]
    for code in cells:
        targets += _imported(code)
    runs = hashlib.sha256()  # what the page's blocks run: the code they reach
    reached = reachable_code(*sorted(set(targets)))
    for name, body in reached.items():
        runs.update(f"{name}\0{body}\0".encode())
    for tool in sorted((ROOT / "site_tools").glob("*.py")):
        if tool.name not in NOT_RUN_BY_PAGES:
            runs.update(tool.read_bytes())
    code = hashlib.sha256(listings.digest() + runs.digest())
    data = hashlib.sha256()
    for path in data_files_read(cells, reached.values()):
        data.update(f"{path.name}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\0".encode())
    return {
        "listings": listings.hexdigest(),
        "code": code.hexdigest(),
        "runs": runs.hexdigest(),
        "data": data.hexdigest(),
    }


def data_files_read(*texts) -> list[Path]:
    """The files of ``docs/data`` whose name appears in the given code (a page's
    blocks, the package code they reach): the data a page's output depends on."""
    code = "\0".join(text for group in texts for text in group)
    return [p for p in sorted(DATA.glob("*")) if p.is_file() and p.name in code]


def _defined(body: str) -> list[str]:
    """The functions and classes a region defines at its top level."""
    try:
        definitions = read_source(body).definitions
    except SyntaxError:  # a region that ends inside a class body
        return [m for m in re.findall(r"^(?:def|class) (\w+)", body, re.MULTILINE)]
    return sorted(
        (name for name, d in definitions.items() if d.kind in ("function", "class")),
        key=lambda name: definitions[name].position,
    )
