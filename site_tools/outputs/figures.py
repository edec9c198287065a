"""Figures built by the build: a matplotlib Figure becomes an inline SVG image.

A figure's words are prose, not strings inside executed code, so that the code
that draws a figure is the same in every edition of a page. A build-only block
prints the picture, and the Markdown right after it says what it shows::

    ```python exec="on" html="true" session="masks"
    from site_tools.outputs.figures import figure_html

    print(figure_html(fig, id="fig-masks-padding"))
    ```

    A padding mask over a batch of three examples: the padded keys' columns
    are blocked.
    { .figure-caption data-figure="fig-masks-padding" }

    Three 5 by 5 attention maps; in the second the columns of keys 3 and 4
    are grey.
    { .figure-alt data-figure="fig-masks-padding" }

The build moves the first paragraph into the figure as its ``<figcaption>`` and
the second into the image's ``alt`` attribute
(:func:`site_tools.engine.captions.attach_text`). Text drawn inside the picture
(axis labels, legends, titles) stays as it is in every edition.
"""

from __future__ import annotations

import base64
import html

from attention_src.plotting import figure_to_svg

ALT_SLOT = '<p class="figure-alt-slot"></p>'  # an alt text shown as text (no image)


def svg_img(fig) -> str:
    """The figure as an ``<img>`` holding its SVG as a data URI, its alt text to come."""
    data = base64.b64encode(figure_to_svg(fig).encode("utf-8")).decode("ascii")
    return f'<img src="data:image/svg+xml;base64,{data}" alt="">'


def figure_html(fig, *, id: str, measured: bool = False) -> str:
    """``<figure id=…>`` holding the figure as an SVG ``<img>``.

    Its caption and alt text come from the Markdown after the block
    (:func:`site_tools.engine.captions.attach_text`); the build numbers the
    caption ("Figure 6.1 —") and fills in links to ``#<id>`` whose text holds a lone ``#``
    (``site_tools/engine/numbering.py``). ``id`` must start with ``fig-``.

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
