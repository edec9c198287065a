"""Parts of the MkDocs plugin (site_tools/mkdocs_plugin.py) on small inputs, without a build:
the labs' copy buttons and empty scripts (site_tools/outputs/labs.py), the sizes of the
pictures the pages load as files (site_tools/engine/figure_files.py), and where the build
finds tags in a page (site_tools/engine/markup.py)."""

from __future__ import annotations

import base64
import io
import logging
import re
import struct
import zlib
from importlib.resources import files

import pytest
from bs4 import BeautifulSoup

from site_tools.engine.figure_files import FigureFiles, picture_size
from site_tools.outputs import labs

# --- a lab's copy buttons ---------------------------------------------------------------------


def _jupyter_button(cell: str) -> str:
    """A copy button as mkdocs-jupyter (0.26.3, pinned) writes it, from its own template."""
    template = (files("mkdocs_jupyter") / "templates/mkdocs_html/notebook.html.j2").read_text()
    start = template.index("<clipboard-copy")
    end = template.index("</clipboard-copy>", start) + len("</clipboard-copy>")
    return template[start:end].replace("{{ vars.cell_id }}", cell)


def test_the_snippet_is_mkdocs_jupyters_markup():
    button = _jupyter_button("7")
    assert button.startswith('<clipboard-copy for="cell-7", aria-label="Copy to Clipboard">')
    assert re.search(r'<div>\s*<span class="notice" hidden>Copied!</span>', button)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_labs_copy_button_is_named_by_its_words(language, caplog):
    """No aria-label (nor mkdocs-jupyter's stray ``,``): the button's name is its words,
    the notice in the edition's words, then the visually hidden name; the rest of the page
    keeps its bytes."""
    name, notice = {"en": ("Copy to clipboard", "Copied!"), "zh": ("复制", "已复制")}[language]
    button = _jupyter_button("7")
    after_notice = button[button.index("Copied!</span>") + len("Copied!</span>") :]
    before, after = '<p>a & b</p>\n<pre id="cell-7">x = 1</pre>\n', "\n<p>end</p>\n"
    with caplog.at_level(logging.WARNING):
        out = labs.copy_buttons(before + button + after, language)
    assert caplog.records == []
    assert out.startswith(before + '<clipboard-copy for="cell-7">')
    assert out.endswith(after_notice + after)
    copy = BeautifulSoup(out, "html.parser").find("clipboard-copy")
    assert dict(copy.attrs) == {"for": "cell-7"}
    assert "aria-label" not in out
    spans = copy.find_all("span")
    assert [span.get("class") for span in spans] == [["notice"], ["a11y-visually-hidden"]]
    assert spans[0].has_attr("hidden") and spans[0].get_text() == notice
    assert spans[1].get_text() == name and not spans[1].has_attr("hidden")
    assert copy.get_text(" ", strip=True) == f"{notice} {name}"


def test_a_copy_button_keeps_its_other_attributes_as_they_were():
    raw = (
        '<clipboard-copy for="cell-1" title="say &quot;hi&quot; &amp; go" class="a b", '
        'aria-label="Copy to Clipboard"><div><span class="notice" hidden>Copied!</span></div>'
        "</clipboard-copy>"
    )
    copy = BeautifulSoup(labs.copy_buttons(raw, "en"), "html.parser").find("clipboard-copy")
    assert dict(copy.attrs) == {"for": "cell-1", "title": 'say "hi" & go', "class": ["a", "b"]}


def test_a_copy_button_of_other_markup_keeps_its_name_and_says_so(caplog):
    """A button whose notice is not mkdocs-jupyter's is left as it is, with a warning."""
    other = (
        '<clipboard-copy for="cell-1" aria-label="Copy to Clipboard">'
        '<div><span class="notice" hidden>Done</span></div></clipboard-copy>'
    )
    with caplog.at_level(logging.WARNING):
        assert labs.copy_buttons(other, "en") == other
    assert "kept its English name" in caplog.text
    page = "<p>no lab here</p>"
    assert labs.copy_buttons(page, "zh") is page


# --- empty scripts ----------------------------------------------------------------------------


def test_an_empty_script_goes_and_a_real_one_stays():
    kept = '<script src="a.js"></script>\n<script>var s = \'<script src="">\';</script>\n'
    page = (
        '<head>\n<!-- mathjax -->\n<script src=""> </script>\n'
        f"{kept}<script type=\"text/javascript\" src=''></script>\n</head>"
    )
    assert labs.without_empty_scripts(page) == f"<head>\n<!-- mathjax -->\n{kept}</head>"
    assert labs.without_empty_scripts(kept) is kept


# --- the size of a picture --------------------------------------------------------------------


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def _png(width: int, height: int) -> bytes:
    """A whole PNG (grey, 8 bits) of ``width`` x ``height`` pixels."""
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = (b"\x00" + bytes(width)) * height
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows))
        + _chunk(b"IEND", b"")
    )


def _gif(width: int, height: int) -> bytes:
    """A whole GIF89a of ``width`` x ``height`` pixels of its first colour: LZW codes of 3
    bits, a clear code before every two pixels (so that the code width never grows)."""
    pixels = width * height
    codes = [code for at in range(0, pixels, 2) for code in [4] + [0] * min(2, pixels - at)]
    bits = sum(code << (3 * i) for i, code in enumerate([*codes, 5]))
    data = bits.to_bytes((3 * (len(codes) + 1) + 7) // 8, "little")
    blocks = b"".join(
        bytes([len(data[i : i + 255])]) + data[i : i + 255] for i in range(0, len(data), 255)
    )
    screen = struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    image = b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0)
    return b"GIF89a" + screen + image + b"\x02" + blocks + b"\x00\x3b"


def test_a_png_and_a_gif_are_their_pixels():
    png, gif = _png(7, 3), _gif(300, 2)
    assert picture_size(png) == struct.unpack(">II", png[16:24]) == (7, 3)
    assert picture_size(gif) == struct.unpack("<HH", gif[6:10]) == (300, 2)
    assert picture_size(png[:20]) is None  # cut before its size


SVG = '<svg xmlns="http://www.w3.org/2000/svg"{}><rect width="1" height="1"/></svg>'


@pytest.mark.parametrize(
    "attributes, size",
    [
        (' width="489.6pt" height="180pt" viewBox="0 0 489.6 180"', (489.6 * 4 / 3, 180 * 4 / 3)),
        (' width="640px" height="480px"', (640, 480)),
        (' height="150" width="300.4"', (300.4, 150)),
        (' viewBox="0 0 300 150"', (300, 150)),  # the rect's width is not the picture's
        (' viewBox="-10,-5, 320.6,150.2"', (320.6, 150.2)),
        (' width="100%" height="100%" viewBox="0 0 300 150"', (300, 150)),
        (' stroke-width="2" viewBox="0 0 30 15"', (30, 15)),
    ],
)
def test_an_svg_is_its_root_elements_size_in_css_pixels(attributes, size):
    """A browser shows an SVG at its ``width`` and ``height`` (1 pt = 4/3 px), else at its
    ``viewBox``'s size."""
    svg = SVG.format(attributes).encode()
    expected = tuple(max(1, round(length)) for length in size)
    assert picture_size(svg) == expected
    assert picture_size(b'<?xml version="1.0" encoding="utf-8"?>\n' + svg) == expected


def test_a_matplotlib_svg_is_its_figure_size():
    """What the pages' figures are: matplotlib's SVG of a 6.4 x 4.8 inch figure is shown at
    96 CSS pixels an inch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=(6.4, 4.8))
    figure.add_subplot().plot([0, 1], [1, 0])
    svg = io.BytesIO()
    figure.savefig(svg, format="svg")
    plt.close(figure)
    assert picture_size(svg.getvalue()) == (round(6.4 * 96), round(4.8 * 96))


def test_a_picture_of_no_size_has_none():
    assert picture_size(SVG.format("").encode()) is None
    assert picture_size(SVG.format(' width="10em" height="5em"').encode()) is None
    assert picture_size(b"not a picture") is None


# --- where the tags are -----------------------------------------------------------------------


@pytest.mark.parametrize("line_break", ["\n", "\r\n", "\r", "\x0c", "\x85", "\u2028"])
def test_tags_after_any_line_break_are_rewritten_in_place(line_break):
    """html.parser counts lines at ``\\n`` only: a page whose text holds another line break
    (a notebook's progress output writes ``\\r``) still has its tags rewritten where they
    are."""
    svg = SVG.format(' width="10" height="5"').encode()
    image = f'<img alt="a" src="data:image/svg+xml;base64,{base64.b64encode(svg).decode()}">'
    text = f"<p>one{line_break}two</p>\n<p>three</p>"
    figures = FigureFiles()
    swapped = figures.swap(f"{text}{image}\n", "")
    (name,) = figures.files
    assert swapped == f'{text}<img alt="a" src="{name}" width="10" height="5"' + (
        ' loading="lazy" decoding="async">\n'
    )
    scripts = f'{text}<script src="a.js"></script>\n<script src=""></script>\n<p>end</p>'
    assert labs.without_empty_scripts(scripts) == (
        f'{text}<script src="a.js"></script>\n<p>end</p>'
    )
    button = _jupyter_button("1")
    out = labs.copy_buttons(f"{text}{button}", "en")
    assert out.startswith(f'{text}<clipboard-copy for="cell-1">')
    assert BeautifulSoup(out, "html.parser").find("clipboard-copy").get_text(" ", strip=True) == (
        "Copied! Copy to clipboard"
    )
