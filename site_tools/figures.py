"""Figures built by the build: a matplotlib Figure becomes an inline SVG image."""

from __future__ import annotations

import base64
import html
import re

from attention_src.plotting import figure_to_svg


def caption_html(caption: str) -> str:
    """A caption as HTML: escaped, with `backticks` shown as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(caption))


def figure_html(
    fig, alt: str, caption: str | None = None, id: str | None = None, *, measured: bool = False
) -> str:
    """``<figure>`` holding the figure as an SVG ``<img>`` with ``alt`` text.

    ``caption`` becomes the ``<figcaption>``; the build numbers it ("Figure 6.1 —")
    and fills in links to ``#<id>`` whose text holds a lone ``#``
    (``site_tools/numbering.py``). ``id`` must start with ``fig-``.

    The SVG is embedded as a data URI so that the page carries its own
    pictures (nothing is written into ``docs/``, which would make
    ``mkdocs serve`` rebuild forever) and two builds give the same bytes.

    ``measured=True`` marks a figure of timings measured in every build (timings
    are never cached): its bytes differ from build to build, so the
    reproducibility test (tests/docs/test_build.py) leaves it out.
    """
    if not alt or not alt.strip():
        raise ValueError("every figure needs alt text that says what it shows")
    if id is not None and not id.startswith("fig-"):
        raise ValueError(f"a figure id starts with 'fig-', got {id!r}")
    svg = figure_to_svg(fig)
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    id_attr = f' id="{html.escape(id)}"' if id else ""
    parts = [
        f'<figure class="built-figure{" measured" if measured else ""}"{id_attr}>',
        f'<img src="data:image/svg+xml;base64,{data}" alt="{html.escape(alt, quote=True)}">',
    ]
    if caption:
        parts.append(f"<figcaption>{caption_html(caption)}</figcaption>")
    parts.append("</figure>")
    return "".join(parts)
