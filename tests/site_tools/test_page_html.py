"""What the build does to a page's HTML, without a build (site_tools.engine.figure_files,
site_tools.outputs.labs): a figure's picture becomes a file named by its hash, with
its size, and back; a lab's copy button is named by its words. (The built site's
figures and labs: tests/site/test_build.py.)"""

from __future__ import annotations

import base64
import hashlib

from bs4 import BeautifulSoup


def test_figure_files_round_trip(tmp_path):
    """FigureFiles.swap turns a data-URI picture into a file reference with its size in
    CSS pixels (SVG's pt, a PNG's pixels), and FigureFiles.inline puts the same bytes
    back (a notebook embeds them); a picture whose size is unknown stays inline."""
    from site_tools.engine.figure_files import FigureFiles

    svg = (
        b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="489.6pt" '
        b'height="180pt" viewBox="0 0 489.6 180"><rect width="1" height="1"/></svg>\n'
    )
    png = (
        b"\x89PNG\r\n\x1a\n"
        + b"\x00\x00\x00\rIHDR"
        + (640).to_bytes(4, "big")
        + (480).to_bytes(4, "big")
        + b"\x08\x06\x00\x00\x00"
    )
    boxed = b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 300 150"></svg>'
    unsized = b'<svg xmlns="http://www.w3.org/2000/svg"></svg>'

    def uri(kind: str, data: bytes) -> str:
        return f"data:image/{kind};base64,{base64.b64encode(data).decode()}"

    page = (
        f'<figure class="built-figure"><img src="{uri("svg+xml", svg)}" alt="a"></figure>'
        f'<img alt="b > c" src="{uri("png", png)}">'
        f'<img src="{uri("svg+xml", boxed)}" alt="d" width="30">'
        f'<img src="{uri("svg+xml", unsized)}" alt="e">'
    )
    figures = FigureFiles()
    out = figures.swap(page, "chapters/masks/")
    imgs = BeautifulSoup(out, "html.parser").find_all("img")
    names = {kind: f"{hashlib.sha256(data).hexdigest()[:16]}" for kind, data in
             (("svg", svg), ("png", png), ("boxed", boxed))}  # fmt: skip
    assert imgs[0]["src"] == f"../../assets/figures/{names['svg']}.svg"
    assert (imgs[0]["width"], imgs[0]["height"]) == ("653", "240")  # 489.6 pt, 180 pt
    assert imgs[0]["loading"] == "lazy" and imgs[0]["alt"] == "a"
    assert imgs[1]["src"] == f"../../assets/figures/{names['png']}.png"
    assert (imgs[1]["width"], imgs[1]["height"], imgs[1]["alt"]) == ("640", "480", "b > c")
    assert imgs[2]["src"].endswith(f"{names['boxed']}.svg") and imgs[2]["width"] == "30"
    assert not imgs[2].has_attr("height"), "a size the page gives is kept as it is"
    assert imgs[3]["src"] == uri("svg+xml", unsized), "a picture of unknown size stays inline"
    home = figures.swap(page, "")  # the home page: no folder to climb out of
    assert f'<img src="assets/figures/{names["svg"]}.svg"' in home
    assert figures.write(tmp_path) == 3
    assert sorted(p.name for p in (tmp_path / "assets" / "figures").iterdir()) == sorted(
        [f"{names['svg']}.svg", f"{names['png']}.png", f"{names['boxed']}.svg"]
    )
    assert figures.write(tmp_path) == 0, "a file already there is not written again"
    # The notebook reads the files back from the site (another build's FigureFiles).
    back = BeautifulSoup(FigureFiles().inline(out, tmp_path), "html.parser")
    assert [img["src"] for img in back.find_all("img")] == [
        uri("svg+xml", svg),
        uri("png", png),
        uri("svg+xml", boxed),
        uri("svg+xml", unsized),
    ]


def test_lab_copy_buttons_are_named_by_their_words():
    """A lab's copy button (mkdocs-jupyter's ``<clipboard-copy>``) loses its English
    aria-label: its name is its words, "Copied!" (shown after a click) then the edition's
    "Copy to clipboard" for screen readers, so the name holds the visible text; the empty
    ``<script src="">`` of mkdocs-jupyter's MathJax goes."""
    from site_tools.outputs import labs

    for raw in (  # as mkdocs-jupyter's template writes it, and as the page arrives parsed
        '<clipboard-copy for="cell-1", aria-label="Copy to Clipboard">\n<div>\n'
        '<span class="notice" hidden>Copied!</span><svg aria-hidden="true"></svg>',
        '<clipboard-copy ,="" aria-label="Copy to Clipboard" for="cell-1">\n<div>\n'
        '<span class="notice" hidden="">Copied!</span><svg aria-hidden="true"></svg>',
    ):
        for language, words in labs.CLIPBOARD_WORDS.items():
            button = BeautifulSoup(labs.copy_buttons(raw, language), "html.parser")
            copy = button.find("clipboard-copy")
            assert dict(copy.attrs) == {"for": "cell-1"}, copy.attrs
            notice = copy.find("span", class_="notice")
            assert notice.has_attr("hidden") and notice.get_text() == words[1]
            spoken = copy.find("span", class_="a11y-visually-hidden")
            assert spoken.get_text() == words[0], language
            assert copy.get_text(" ", strip=True) == f"{words[1]} {words[0]}"
    kept = '<script src="a.js"></script>'
    assert labs.without_empty_scripts(f'<!-- mathjax -->\n<script src=""> </script>\n{kept}') == (
        f"<!-- mathjax -->\n{kept}"
    )
