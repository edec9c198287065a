"""A figure's words, moved into it: its caption and its alt text.

A figure's words are prose, not strings inside executed code, so that the code
that draws a figure is the same in every edition of a page
(:func:`site_tools.outputs.figures.figure_html`). The Markdown right after the
block that prints the figure says what it shows::

    A padding mask over a batch of three examples: the padded keys' columns
    are blocked.
    { .figure-caption data-figure="fig-masks-padding" }

    Three 5 by 5 attention maps; in the second the columns of keys 3 and 4
    are grey.
    { .figure-alt data-figure="fig-masks-padding" }

:func:`attach_text` (run over each page's HTML by :mod:`site_tools.engine.pages`)
moves the first paragraph into the figure as its ``<figcaption>`` and the second
into its image's ``alt`` attribute (or in place of an alt slot, a figure with no
image). It reads the page with BeautifulSoup and edits the page's own text
(:mod:`site_tools.engine.markup`): every other byte of the page stays as it was.
"""

from __future__ import annotations

import html

from site_tools.engine.markup import Only, Source, classes, parse
from site_tools.outputs.figures import ALT_SLOT

# What attach_text reads: a page without any of these has nothing to attach or check.
_MARKS = ("figure-caption", "figure-alt", "built-figure", "attention-explorer")
_BUILT = ("built-figure", "attention-explorer")  # figures a block printed
_FIGURES_AND_WORDS = Only(lambda name, attrs: name == "figure" or "data-figure" in attrs)


def attach_text(page: str) -> tuple[str, list[str]]:
    """Move the caption and alt paragraphs into their figures.

    Returns the page and a list of problems: a paragraph whose figure is not on
    the page, a figure given two captions, a built figure left without its
    caption or alt text.
    """
    if not any(mark in page for mark in _MARKS):
        return page, []
    source = Source(page, _FIGURES_AND_WORDS)
    problems: list[str] = []
    found: dict[tuple[str, str], str] = {}
    for paragraph in source.soup.find_all("p", attrs={"data-figure": True}):
        kind = {"figure-caption": "caption", "figure-alt": "alt"}.get(" ".join(classes(paragraph)))
        ident = paragraph["data-figure"]
        if kind is None or not ident:
            continue
        if (ident, kind) in found:
            problems.append(f"figure {ident} has two {kind} paragraphs")
        body = source.text[source.inner_start(paragraph) : source.inner_end(paragraph)]
        found[(ident, kind)] = body.strip()
        end = source.end(paragraph)
        while end < len(page) and page[end].isspace():  # the blank lines after it go too
            end += 1
        source.replace(source.start(paragraph), end, "")
    captioned: set[str] = set()
    alt_texts: dict[str, str] = {}
    for (ident, kind), body in found.items():
        figure = source.soup.find("figure", id=ident)
        if figure is None:
            problems.append(f"a {kind} paragraph for {ident}, which is not a figure on this page")
        elif kind == "caption":
            if figure.find("figcaption") is not None:
                problems.append(f"figure {ident} has a caption in its code and one in Markdown")
                continue
            source.insert(source.inner_end(figure), f"<figcaption>{body}</figcaption>")
            captioned.add(ident)
        else:
            alt_texts[ident] = _alt_text(body)
            _give_alt(source, figure, alt_texts[ident])
    for figure in source.soup.find_all("figure"):
        if not classes(figure) or classes(figure)[0] not in _BUILT:
            continue
        ident = figure.get("id")
        name = ident or "a figure without an id"
        text = alt_texts.get(ident)
        empty, slots = _empty_alts(source, figure), _alt_slots(source, figure)
        if (empty and not text) or (slots and text is None):
            problems.append(f"{name} has no alt text (a .figure-alt paragraph after its block)")
        if figure.find("figcaption") is None and ident not in captioned:
            problems.append(f"{name} has no caption (a .figure-caption paragraph after its block)")
    return source.edited(), problems


def _alt_text(body: str) -> str:
    """The paragraph's words, on one line, without their markup."""
    return " ".join(parse(body).get_text().split())


def _empty_alts(source: Source, figure) -> list[int]:
    """Where the figure's empty ``alt=""`` attributes stand."""
    found = []
    for tag in figure.find_all(alt=""):
        at = source.text.find(' alt=""', source.start(tag), source.inner_start(tag))
        if at != -1:
            found.append(at)
    return found


def _alt_slots(source: Source, figure) -> list:
    return [
        p
        for p in figure.find_all("p", class_="figure-alt-slot")
        if source.text[source.start(p) : source.end(p)] == ALT_SLOT
    ]


def _give_alt(source: Source, figure, text: str) -> None:
    for at in _empty_alts(source, figure):
        source.replace(at, at + len(' alt=""'), f' alt="{html.escape(text, quote=True)}"')
    for slot in _alt_slots(source, figure):
        source.replace(source.start(slot), source.end(slot), f"<p>{html.escape(text)}</p>")
