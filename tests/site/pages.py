"""Read the Python code blocks of a page *as the reader sees them*.

pytest-codeblocks does the parsing (markers, ``cont``, ``expected-output``),
but on its own it skips fences whose info string is not exactly ``python``
(titled blocks, ``python exec="on"``) and runs ``--8<--`` include lines
literally. So a page is first put through the same ``pymdownx.snippets``
preprocessor the site uses, and each fence's info string is recorded and then
reduced to plain ``python`` before pytest-codeblocks sees it.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import markdown
from pytest_codeblocks import extract_from_buffer

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

FENCE = re.compile(r"^(?P<indent>\s*)(?P<ticks>`{3,}|~{3,})(?P<info>.*)$")
ATTR = re.compile(r'(\w+)="([^"]*)"')
OUTPUT_LANGS = {"text", "console", "pycon", "output"}


@dataclass
class Block:
    page: Path
    lineno: int  # line of the opening fence, in the page with includes expanded
    code: str
    attrs: dict[str, str] = field(default_factory=dict)
    marks: list[str] = field(default_factory=list)
    expected_output: str | None = None

    @property
    def executed_by_build(self) -> bool:
        return self.attrs.get("exec") in {"on", "true", "yes", "1"}

    @property
    def visible(self) -> bool:
        """Shown on the page as a code block (a build-only block without
        ``source=`` prints HTML, e.g. a figure, and shows no code)."""
        return not self.executed_by_build or bool(self.attrs.get("source"))

    @property
    def raises(self) -> str | None:
        return self.attrs.get("raises")

    @property
    def skip_reason(self) -> str | None:
        for mark in self.marks:
            if mark.startswith("pytest.mark.skip"):
                found = re.search(r"reason\s*=\s*(['\"])(.+?)\1", mark)
                return found.group(2) if found else ""
        return None

    @property
    def included_module(self) -> str | None:
        """``attention_src.x`` when the block is an include titled with its source file."""
        title = self.attrs.get("title", "")
        if re.fullmatch(r"attention_src/[\w/]+\.py", title):
            return title[:-3].replace("/", ".")
        return None

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}, block at line {self.lineno}"


@dataclass
class Page:
    path: Path
    blocks: list[Block]
    problems: list[str]  # fences the extraction would silently miss


@cache
def _snippet_preprocessor():
    md = markdown.Markdown(
        extensions=["pymdownx.snippets"],
        extension_configs={"pymdownx.snippets": {"base_path": [str(ROOT)], "check_paths": True}},
    )
    return md.preprocessors["snippet"]


def expand_includes(text: str) -> list[str]:
    return _snippet_preprocessor().run(text.split("\n"))


def markdown_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def read_page(path: Path) -> Page:
    lines = expand_includes(path.read_text(encoding="utf-8"))
    infos: dict[int, tuple[str, dict[str, str]]] = {}
    problems: list[str] = []
    normalised = []
    inside: str | None = None  # the closing fence while inside a block
    output_fences = []
    for number, line in enumerate(lines, start=1):
        match = FENCE.match(line)
        if match and inside is None:
            ticks, info = match["ticks"], match["info"].strip()
            lang = info.split()[0] if info else ""
            attrs = dict(ATTR.findall(info))
            inside = ticks
            if ticks.startswith("~"):
                problems.append(f"line {number}: use ``` fences, not ~~~ (they are not tested)")
            if lang in {"py", "python3", "{.python}", "{"} or lang.startswith("{"):
                problems.append(f"line {number}: write ```python, not ```{lang}")
            if lang == "python":
                infos[number] = (lang, attrs)
                line = f"{match['indent']}{ticks}python"
            elif lang in OUTPUT_LANGS:
                output_fences.append(number)
        elif (
            match
            and inside is not None
            and match["ticks"].startswith(inside)
            and not match["info"].strip()
        ):
            inside = None
        normalised.append(line)

    raw = extract_from_buffer(io.StringIO("\n".join(normalised) + "\n"))
    blocks = []
    claimed = 0
    for cb in raw:
        if cb.expected_output is not None:
            claimed += 1
        if cb.lineno not in infos:
            continue
        _, attrs = infos[cb.lineno]
        blocks.append(Block(path, cb.lineno, cb.code, attrs, list(cb.marks), cb.expected_output))
    if claimed < len(output_fences):
        problems.append(
            f"{len(output_fences) - claimed} output block(s) (```text) are typed by hand: "
            'print the output with exec="on", or check it with '
            "<!--pytest-codeblocks:expected-output-->"
        )
    return Page(path, blocks, problems)
