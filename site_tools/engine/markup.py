"""Where tags are in a page's HTML, read with BeautifulSoup: the build's one HTML reader
for rewriting a page in place.

BeautifulSoup's ``html.parser`` tree gives each tag's line and column; the build changes
a page's text only inside the tags it finds there (so that the rest of the page keeps
its bytes, which re-serialising the whole tree would not).
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, Tag


def _tag_end(html: str, start: int) -> int:
    """The index after the ``>`` that closes the opening tag at ``start``."""
    quote, end = None, start
    while end < len(html):
        char = html[end]
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == ">":
            return end + 1
        end += 1
    return end


def line_starts(html: str) -> list[int]:
    """Where each line of ``html`` starts, as html.parser counts lines: at each ``\n``
    only (``str.splitlines`` also breaks at ``\r``, ``\x0c``, ``\u2028``…: a page with
    one, a notebook's progress output, would have its tags located on the wrong lines)."""
    return [0, *(found.end() for found in re.finditer("\n", html))]


def locate(html: str, starts: list[int], tag: Tag) -> tuple[int, int]:
    """``(start, end)`` of ``tag``'s opening tag in ``html`` (``starts``: its
    :func:`line_starts`), from where html.parser found it."""
    start = starts[tag.sourceline - 1] + tag.sourcepos
    return start, _tag_end(html, start)


def opening_tags(html: str, name: str, **filters) -> list[tuple[int, int, Tag]]:
    """``(start, end, tag)`` of each opening ``<name …>`` tag of ``html`` (BeautifulSoup's
    ``find_all(name, **filters)``), in page order."""
    starts = line_starts(html)
    tags = BeautifulSoup(html, "html.parser").find_all(name, **filters)
    return [(*locate(html, starts, tag), tag) for tag in tags]


def element_end(html: str, name: str, opening_end: int) -> int:
    """The index after the ``</name>`` that closes an element without nested ``name``
    elements (a ``<script>``, a ``<span>`` of text) whose opening tag ends at
    ``opening_end``."""
    close = html.index(f"</{name}", opening_end)
    return _tag_end(html, close)


def splice(html: str, edits: list[tuple[int, int, str]]) -> str:
    """``html`` with each span ``(start, end)`` replaced by its text (spans in order,
    not overlapping)."""
    out, last = [], 0
    for start, end, text in sorted(edits):
        out += [html[last:start], text]
        last = end
    return "".join(out) + html[last:]
