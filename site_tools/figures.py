"""Figures built by the build: a matplotlib Figure becomes an inline SVG image.

A figure's words are prose, not strings inside executed code, so that the code
that draws a figure is the same in every edition of a page. A build-only block
prints the picture, and the Markdown right after it says what it shows::

    ```python exec="on" html="true" session="masks"
    from site_tools.figures import figure_html

    print(figure_html(fig, id="fig-masks-padding"))
    ```

    A padding mask over a batch of three examples: the padded keys' columns
    are blocked.
    { .figure-caption data-figure="fig-masks-padding" }

    Three 5 by 5 attention maps; in the second the columns of keys 3 and 4
    are grey.
    { .figure-alt data-figure="fig-masks-padding" }

:func:`attach_text` (run over each built page's HTML) moves the first paragraph
into the figure as its ``<figcaption>`` and the second into the image's ``alt``
attribute. Text drawn inside the picture (axis labels, legends, titles) stays
as it is in every edition.
"""

from __future__ import annotations

import base64
import html
import re

from attention_src.plotting import figure_to_svg

ALT_SLOT = '<p class="figure-alt-slot"></p>'  # an alt text shown as text (no image)


def svg_img(fig) -> str:
    """The figure as an ``<img>`` holding its SVG as a data URI, its alt text to come."""
    data = base64.b64encode(figure_to_svg(fig).encode("utf-8")).decode("ascii")
    return f'<img src="data:image/svg+xml;base64,{data}" alt="">'


def figure_html(fig, *, id: str, measured: bool = False) -> str:
    """``<figure id=…>`` holding the figure as an SVG ``<img>``.

    Its caption and alt text come from the Markdown after the block
    (:func:`attach_text`); the build numbers the caption ("Figure 6.1 —") and
    fills in links to ``#<id>`` whose text holds a lone ``#``
    (``site_tools/numbering.py``). ``id`` must start with ``fig-``.

    The SVG is embedded as a data URI so that the page carries its own
    pictures (nothing is written into ``docs/``, which would make
    ``mkdocs serve`` rebuild forever) and two builds give the same bytes.

    ``measured=True`` marks a figure of timings measured when the page's
    blocks ran: the reproducibility test (tests/site/test_build.py) leaves it out.
    """
    if not isinstance(id, str) or not id.startswith("fig-"):
        raise ValueError(f"a figure id is a string starting with 'fig-', got {id!r}")
    kind = "built-figure measured" if measured else "built-figure"
    return f'<figure class="{kind}" id="{html.escape(id)}">{svg_img(fig)}</figure>'


# <p class="figure-caption" data-figure="fig-…">…</p>, as attr_list writes it
_TEXT = re.compile(
    r'<p\b(?=[^>]*\bclass="figure-(?P<kind>caption|alt)")'
    r'(?=[^>]*\bdata-figure="(?P<id>[^"]+)")[^>]*>(?P<body>.*?)</p>\s*',
    re.S,
)


def figure_span(page: str, ident: str) -> tuple[int, int] | None:
    start = re.search(rf'<figure\b[^>]*\bid="{re.escape(ident)}"', page)
    if start is None:
        return None
    end = page.find("</figure>", start.end())
    return (start.start(), end) if end != -1 else None


def attach_text(page: str) -> tuple[str, list[str]]:
    """Move the caption and alt paragraphs into their figures.

    Returns the page and a list of problems: a paragraph whose figure is not on
    the page, a figure given two captions, a built figure left without its
    caption or alt text.
    """
    problems: list[str] = []
    found: dict[tuple[str, str], str] = {}
    for match in _TEXT.finditer(page):
        key = (match["id"], match["kind"])
        if key in found:
            problems.append(f"figure {match['id']} has two {match['kind']} paragraphs")
        found[key] = match["body"].strip()
    page = _TEXT.sub("", page)
    for (ident, kind), body in found.items():
        span = figure_span(page, ident)
        if span is None:
            problems.append(f"a {kind} paragraph for {ident}, which is not a figure on this page")
            continue
        start, end = span
        inner = page[start:end]
        if kind == "caption":
            if "<figcaption" in inner:
                problems.append(f"figure {ident} has a caption in its code and one in Markdown")
                continue
            inner += f"<figcaption>{body}</figcaption>"
        else:
            plain = html.unescape(re.sub(r"<[^>]+>", "", body))
            text = " ".join(plain.split())
            inner = inner.replace(' alt=""', f' alt="{html.escape(text, quote=True)}"')
            inner = inner.replace(ALT_SLOT, f"<p>{html.escape(text)}</p>")
        page = page[:start] + inner + page[end:]
    built = re.compile(r'<figure\b[^>]*class="(?:built-figure|attention-explorer)[^>]*>')
    for match in built.finditer(page):
        ident = re.search(r'\bid="([^"]+)"', match[0])
        name = ident[1] if ident else "a figure without an id"
        end = page.find("</figure>", match.end())
        inner = page[match.end() : end]
        if ' alt=""' in inner or ALT_SLOT in inner:
            problems.append(f"{name} has no alt text (a .figure-alt paragraph after its block)")
        if "<figcaption" not in inner:
            problems.append(f"{name} has no caption (a .figure-caption paragraph after its block)")
    return page, problems
