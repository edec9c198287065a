"""A blank line before every heading, in both editions.

Python-Markdown (which MkDocs uses) makes a heading of any line that starts with
one to six ``#``, even with no space after them and even in the middle of a
paragraph. So a paragraph wrapped so that a line starts with ``#``, say the
``#](masks.md)`` of ``[chapter #](masks.md)``, or a ``#3``, silently becomes a
heading. The rule that catches it: outside code fences, a line that starts
with ``#`` is a heading only where it was meant to be one, after a blank line
(or first in the page, after its front matter); any other such line is a
paragraph line that wrapped badly.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EDITIONS = ("docs", "docs-zh")
PAGES = sorted(
    page.relative_to(ROOT).as_posix()
    for edition in EDITIONS
    for page in (ROOT / edition).rglob("*.md")
)
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
HEADING = re.compile(r"^#{1,6}(?!#)")  # Python-Markdown's rule: no space needed


def heading_problems(text: str) -> list[str]:
    """Lines outside code fences that Markdown reads as headings without a blank line
    before them, as ``"line N: ..."``."""
    lines = text.split("\n")
    start = 0
    if lines and lines[0] == "---":  # front matter: the page starts after it
        start = lines.index("---", 1) + 1
    problems, fence = [], None
    for number in range(start, len(lines)):
        line = lines[number]
        opened = FENCE.match(line)
        if fence is not None:  # inside a fence: only its closing line matters
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        if HEADING.match(line.lstrip()) and number > start and lines[number - 1].strip():
            problems.append(f"line {number + 1}: {line.strip()[:60]!r} follows a non-blank line")
    return problems


@pytest.mark.parametrize("page", PAGES)
def test_a_blank_line_before_every_heading(page):
    assert heading_problems((ROOT / page).read_text("utf-8")) == []


def test_a_wrapped_hash_is_caught():
    wrapped = "Read [chapter\n#](masks.md) first, then\n#3 of the list.\n"
    assert heading_problems(wrapped) == [
        "line 2: '#](masks.md) first, then' follows a non-blank line",
        "line 3: '#3 of the list.' follows a non-blank line",
    ]
    indented = "!!! note\n    A line that wraps\n    # here.\n"  # in an admonition
    assert len(heading_problems(indented)) == 1


def test_headings_fences_and_front_matter_pass():
    page = (
        "---\ntranslated_from: 0123\n---\n# Title\n\nText.\n\n## Part { #part }\n\n"
        "```python\nx = 1\n# a comment, not a heading\n```\n\n"
        "    ```python\n    # indented fence\n    ```\n"
    )
    assert heading_problems(page) == []
    assert len(heading_problems(page.replace("Text.\n\n## Part", "Text.\n## Part"))) == 1
