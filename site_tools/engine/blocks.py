"""The one reader of a page's fenced blocks: every module that reads fences uses it.

A fence opens with three or more backticks or tildes, indented or not (a block
folded in a "Going further" detour is indented), followed by its info string
(``python exec="on" …``); it closes with a line of the same character, at least
as long, with nothing after it and indented no deeper than the opening. A fence
inside another (a ``````markdown`` example that shows a fence) is part of the
outer block's body, not a block of its own. The body is unindented by the
opening's indent (as Markdown reads it), then dedented.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<mark>`{3,}|~{3,})(?P<info>[^\n`]*)$")


@dataclass(frozen=True)
class Fence:
    info: str  # what follows the opening mark, stripped: the language and options
    code: str  # the body, unindented and dedented, ending in a newline
    line: int  # 1-based line of the opening fence
    end: int  # 1-based line of the closing fence (one past the text when unclosed)
    indent: str = ""  # the opening fence's indent

    @property
    def lang(self) -> str:
        """The language of the info string (``python``), or ``""``."""
        return self.info.split()[0] if self.info else ""


def _closes(line: str, mark: str, indent: str) -> bool:
    stripped = line.strip()
    return (
        len(stripped) >= len(mark)
        and set(stripped) == {mark[0]}
        and len(line) - len(line.lstrip()) <= len(indent)
    )


def _unindent(line: str, indent: str) -> str:
    return line[len(indent) :] if line.startswith(indent) else line.lstrip()


def split(text: str | list[str]) -> tuple[list[Fence], list[tuple[int, str]]]:
    """The fenced blocks of ``text`` (its lines, or the text), and its other lines
    as ``(line number, text)``, both in page order."""
    lines = text.split("\n") if isinstance(text, str) else text
    fences: list[Fence] = []
    prose: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        opened = OPEN.match(lines[i])
        if not opened:
            prose.append((i + 1, lines[i]))
            i += 1
            continue
        mark, indent = opened["mark"], opened["indent"]
        j = i + 1
        while j < len(lines) and not _closes(lines[j], mark, indent):
            j += 1
        body = "\n".join(_unindent(line, indent) for line in lines[i + 1 : j])
        code = textwrap.dedent(body).rstrip("\n") + "\n"
        fences.append(Fence(opened["info"].strip(), code, i + 1, j + 1, indent))
        i = j + 1
    return fences, prose


def fences(text: str | list[str], lang: str | None = None) -> list[Fence]:
    """The fenced blocks of ``text`` in page order (of language ``lang`` only, if given)."""
    found = split(text)[0]
    return found if lang is None else [fence for fence in found if fence.lang == lang]
