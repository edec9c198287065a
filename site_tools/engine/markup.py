"""HTML, read one way: BeautifulSoup with Python's ``html.parser``, and where in
the text each element it finds stands, so that a page is edited in place.

The build changes pages that other steps read after it (the figures' files, the
search index, the Chinese edition's listings, the notebooks, the tests), and
BeautifulSoup does not write back the bytes it read: ``<img …>`` comes out as
``<img …/>``, a code block's ``&quot;`` as ``"``, an SVG's ``viewBox`` as
``viewbox``. So a module of the build finds what it changes with BeautifulSoup
(:class:`Source`: the text and its parse) and splices the page's own text at the
positions the parse gives; every byte it does not change stays as it was.

``html.parser`` records where each element's start tag begins (its line and
column). Where the start tag ends and where the element's end tag stands are
found from there, and checked: the piece of text, parsed alone, must hold the
same element (:class:`MarkupError` otherwise).
"""

from __future__ import annotations

import functools
import itertools

from bs4 import BeautifulSoup, Comment, NavigableString, SoupStrainer, Tag
from bs4.filter import ElementFilter


class MarkupError(ValueError):
    """An element whose place in the page's text could not be found."""


def parse(text: str, *only: str | ElementFilter) -> BeautifulSoup:
    """``text`` parsed with ``html.parser``. With ``only`` (element names, or one
    ``ElementFilter``), only those elements, and what they hold, are built: most of
    a page is code, whose thousands of ``<span>`` then cost no objects."""
    if len(only) == 1 and isinstance(only[0], ElementFilter):
        return BeautifulSoup(text, "html.parser", parse_only=only[0])
    return BeautifulSoup(text, "html.parser", parse_only=SoupStrainer(list(only)) if only else None)


class Only(ElementFilter):
    """Builds only the elements for which ``test(name, attributes)`` holds, and what
    they hold (the attributes as written: ``class`` one string)."""

    def __init__(self, test):
        super().__init__()
        self.test = test

    def allow_tag_creation(self, nsprefix, name, attrs) -> bool:
        return self.test(name, attrs or {})

    def allow_string_creation(self, string) -> bool:
        return False


@functools.lru_cache(maxsize=2)
def _parsed(text: str, only: tuple) -> BeautifulSoup:
    # The build asks twice for the same page's figures (figure_ids, then number_page):
    # one parse. A Source never changes its soup, so sharing it is safe.
    return parse(text, *only)


def classes(tag: Tag) -> list[str]:
    return tag.get("class") or []


class Source:
    """A page's HTML text, its parse (:func:`parse`, ``only`` as there: read it, never
    change it), and the edits to make to the text (:meth:`replace`, :meth:`insert`,
    :meth:`edited`)."""

    def __init__(self, text: str, *only: str | ElementFilter, soup: BeautifulSoup | None = None):
        self.text = text
        self.soup = _parsed(text, only) if soup is None else soup  # or a parse of it to change
        lengths = (len(line) + 1 for line in text.split("\n"))
        self._lines = [0, *itertools.accumulate(lengths)]
        self._edits: list[tuple[int, int, str]] = []
        self._inner_start: dict[int, int] = {}  # id(tag) -> position, found once
        self._inner_end: dict[int, int] = {}

    # --- where an element stands -------------------------------------------------

    def start(self, tag: Tag) -> int:
        """Where the element's start tag begins (its ``<``)."""
        if tag.sourceline is None:
            raise MarkupError(f"<{tag.name}> has no source position")
        return self._lines[tag.sourceline - 1] + tag.sourcepos

    def inner_start(self, tag: Tag) -> int:
        """Just after the element's start tag: the first ``>`` after its start that
        ends a start tag with the element's attributes (a ``>`` inside a quoted
        value does not)."""
        if id(tag) not in self._inner_start:
            start = self.start(tag)
            end = self.text.find(">", start)
            while end != -1:
                alone = parse(self.text[start : end + 1]).find(True)
                if alone is not None and alone.name == tag.name and alone.attrs == tag.attrs:
                    break
                end = self.text.find(">", end + 1)
            if end == -1:
                raise MarkupError(f"the start tag of <{tag.name}> at {start} does not end")
            self._inner_start[id(tag)] = end + 1
        return self._inner_start[id(tag)]

    def has_end_tag(self, tag: Tag) -> bool:
        """Whether the element ends with an end tag (not ``<img>``, not ``<path/>``)."""
        return not tag.can_be_empty_element and self.text[self.inner_start(tag) - 2] != "/"

    def inner_end(self, tag: Tag) -> int:
        """Where the element's end tag begins (just after its start tag for an
        element without one)."""
        if id(tag) not in self._inner_end:
            self._inner_end[id(tag)] = self._find_inner_end(tag)
        return self._inner_end[id(tag)]

    def end(self, tag: Tag) -> int:
        """Just after the element's end tag (or its start tag, when it has none)."""
        if not self.has_end_tag(tag):
            return self.inner_start(tag)
        return self.text.index(">", self.inner_end(tag)) + 1

    def string_span(self, string: NavigableString) -> tuple[int, int]:
        """Where a text node stands: between the tags around it."""
        before, after, parent = string.previous_sibling, string.next_sibling, string.parent
        if isinstance(string, Comment) or not all(
            n is None or isinstance(n, Tag) for n in (before, after)
        ):
            raise MarkupError(f"the text {str(string)[:40]!r} is not between two tags")
        start = self.inner_start(parent) if before is None else self.end(before)
        end = self.inner_end(parent) if after is None else self.start(after)
        return start, end

    def _find_inner_end(self, tag: Tag) -> int:
        inner = self.inner_start(tag)
        if not self.has_end_tag(tag):
            return inner
        # The first `</name` that closes as many `<name` as were opened inside it.
        opened = sorted(self.start(t) for t in tag.find_all(tag.name))
        at, depth, inside = inner, 1, 0
        while True:
            close = self._end_tag(tag.name, at)
            while inside < len(opened) and opened[inside] < close:
                depth, inside = depth + 1, inside + 1
            depth -= 1
            if depth == 0:
                break
            at = close + 1
        self._check(tag, close)
        return close

    def _end_tag(self, name: str, at: int) -> int:
        found = self.text.find(f"</{name}", at)
        while found != -1:
            follows = self.text[found + 2 + len(name) : found + 3 + len(name)]
            if follows == ">" or follows.isspace():
                return found
            found = self.text.find(f"</{name}", found + 1)
        raise MarkupError(f"no </{name}> after position {at}")

    def _check(self, tag: Tag, close: int) -> None:
        """The text from the element's start to its end tag, parsed alone, is that
        element and nothing else: the same tags and the same text."""
        alone = parse(self.text[self.start(tag) : self.text.index(">", close) + 1]).contents
        same = (
            len(alone) == 1
            and isinstance(alone[0], Tag)
            and alone[0].name == tag.name
            and len(alone[0].find_all(True)) == len(tag.find_all(True))
            and alone[0].get_text() == tag.get_text()
        )
        if not same:
            raise MarkupError(f"could not place the end tag of <{tag.name}> at {close}")

    # --- edits ---------------------------------------------------------------------

    def replace(self, start: int, end: int, new: str) -> None:
        self._edits.append((start, end, new))

    def insert(self, at: int, new: str) -> None:
        self._edits.append((at, at, new))

    def edited(self) -> str:
        """The text with the edits made (in the order given where two insert at one place)."""
        out, at = [], 0
        for start, end, new in sorted(self._edits, key=lambda e: (e[0], e[1])):
            if start < at:
                raise MarkupError(f"two edits overlap at {start}")
            out += [self.text[at:start], new]
            at = end
        return "".join([*out, self.text[at:]])
