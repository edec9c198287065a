"""Figures built by the build: a matplotlib Figure becomes an inline SVG image."""

from __future__ import annotations

import base64
import html

from attention_src.plotting import figure_to_svg


def figure_html(fig, alt: str, caption: str | None = None) -> str:
    """``<figure>`` holding the figure as an SVG ``<img>`` with ``alt`` text.

    The SVG is embedded as a data URI so that the page carries its own
    pictures (nothing is written into ``docs/``, which would make
    ``mkdocs serve`` rebuild forever) and two builds give the same bytes.
    """
    if not alt or not alt.strip():
        raise ValueError("every figure needs alt text that says what it shows")
    svg = figure_to_svg(fig)
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    parts = [
        '<figure class="built-figure">',
        f'<img src="data:image/svg+xml;base64,{data}" alt="{html.escape(alt, quote=True)}">',
    ]
    if caption:
        parts.append(f"<figcaption>{html.escape(caption)}</figcaption>")
    parts.append("</figure>")
    return "".join(parts)
