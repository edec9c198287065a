"""site_tools.engine.captions without a build: a figure's caption and alt text, written
as paragraphs after its block, move into the figure; what is missing is reported."""

from __future__ import annotations

from site_tools.engine.captions import attach_text
from site_tools.outputs.figures import ALT_SLOT

FIGURE = '<figure class="built-figure" id="fig-a"><img src="data:x" alt=""></figure>'
CAPTION = '<p class="figure-caption" data-figure="fig-a">The <em>mask</em> &amp; its keys.</p>\n'
ALT = '<p class="figure-alt" data-figure="fig-a">A grid; <code>k</code> &lt; 3 grey.</p>\n\n'


def test_the_paragraphs_move_into_the_figure_and_nothing_else_changes():
    page = "<p>Before &quot;x&quot;<br></p>\n" + FIGURE + "\n" + CAPTION + ALT + "<p>After</p>"
    out, problems = attach_text(page)
    assert problems == []
    assert out == (
        "<p>Before &quot;x&quot;<br></p>\n"
        '<figure class="built-figure" id="fig-a"><img src="data:x" alt="A grid; k &lt; 3 grey.">'
        "<figcaption>The <em>mask</em> &amp; its keys.</figcaption></figure>\n<p>After</p>"
    )


def test_a_figure_without_an_image_takes_its_alt_text_as_text():
    page = f'<figure class="attention-explorer" id="fig-a"><div>{ALT_SLOT}</div></figure>'
    out, problems = attach_text(page + CAPTION + ALT)
    assert "<div><p>A grid; k &lt; 3 grey.</p></div>" in out and problems == []


def test_what_is_missing_or_doubled_is_reported():
    _, problems = attach_text(FIGURE)
    assert problems == [
        "fig-a has no alt text (a .figure-alt paragraph after its block)",
        "fig-a has no caption (a .figure-caption paragraph after its block)",
    ]
    _, problems = attach_text(FIGURE + CAPTION + CAPTION + ALT.replace("fig-a", "fig-b"))
    assert problems == [
        "figure fig-a has two caption paragraphs",
        "a alt paragraph for fig-b, which is not a figure on this page",
        "fig-a has no alt text (a .figure-alt paragraph after its block)",
    ]
    coded = FIGURE.replace("</figure>", "<figcaption>In code</figcaption></figure>")
    _, problems = attach_text(coded + CAPTION + ALT)
    assert problems == ["figure fig-a has a caption in its code and one in Markdown"]


def test_a_page_without_figures_is_returned_as_it_is():
    page = "<p>No figure here.</p>"
    assert attach_text(page) == (page, [])
