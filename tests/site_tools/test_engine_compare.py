"""``python -m site_tools.engine_compare``: two builds of a site compared page by page on
what the reader gets, whatever the theme's markup.

The fixtures are two small sites written here: the same reader content once in
Material's markup (a figure as a file, ``search/search_index.json``) and once in
Zensical's (other wrappers and classes, the figure as a data URI of the same bytes,
``search.json``). They compare equal; each mutant of the second site (an output, a
figure's picture or number, a chapter number in a link, a copy text, a notebook, the
language switch, the search index) makes exactly its check differ, on its page only.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from site_tools import engine_compare
from site_tools.engine_compare import CHECKS, compare_sites, main, picture_bytes, site_path

PICTURE = b"\x89PNG\r\n\x1a\n fake picture bytes"
OTHER_PICTURE = b"\x89PNG\r\n\x1a\n other picture bytes"
DIAGRAM = '<svg viewBox="0 0 10 10"><title>grid</title><rect width="4" height="4"/></svg>'

# The reader content of the site: a home page and one chapter.
CONTENT = {
    "outputs": ["device: cpu\n", "tensor([0.2689, 0.7311])\n"],
    "caption": '<span class="figure-number">Figure 6.1</span> — Two masks.',
    "diagram_caption": '<span class="figure-number">Figure 6.2</span> — A grid.',
    "picture": PICTURE,
    "link": '<a href="../attention/#heads">chapter 7</a>',
    "home_link": '<a href="chapters/masks/">6. Masks</a>',
    "switch": (
        '<a href="./" hreflang="en">English</a>'
        '<a href="../../zh/chapters/masks/" hreflang="zh">简体中文</a>'
    ),
    "button": '<a href="masks.ipynb" download class="notebook-download">⤓</a>',
    "copies": {"page": "chapters/masks/", "blocks": [{"index": 1, "code": "import torch"}]},
    "notebook": {"cells": [{"cell_type": "code", "source": ["import torch\n", "print(1)"]}]},
    "indexed": ["", "chapters/masks/", "chapters/attention/"],
}


def _material(body: str, switch: str) -> str:
    return (
        '<html><body><header class="md-header"><nav><a href="#">Skip</a>'
        f'<div class="md-select">{switch}</div></nav></header>'
        '<div class="md-container"><nav class="md-nav"><a href="../attention/">7. Heads</a>'
        '</nav><main><div class="md-content"><article class="md-content__inner md-typeset">'
        f"{body}</article></div></main></div></body></html>"
    )


def _zensical(body: str, switch: str) -> str:
    return (
        '<html><head><link rel="alternate" hreflang="x"></head><body>'
        '<div class="md-header__option"><ul class="md-select__list">'
        f"{switch}</ul></div><div data-md-component=container><div class=md-main__inner>"
        f'<article class="md-content__inner md-typeset zen">{body}</article>'
        '</div><footer><a href="../attention/">Next: 7. Heads</a></footer></div></body></html>'
    )


def _code(output: str) -> str:
    return (
        '<div class="language-text highlight exec-output no-copy"><pre><span></span>'
        f"<code>{output}</code></pre></div>"
    )


def write_site(root: Path, content: dict, engine: str) -> Path:
    """Write the two pages (and their files) of a site built by ``engine``."""
    wrap = _material if engine == "material" else _zensical
    if engine == "material":
        (root / "assets/figures").mkdir(parents=True)
        (root / "assets/figures/ab12.png").write_bytes(content["picture"])
        src = "../../assets/figures/ab12.png"
    else:
        src = "data:image/png;base64," + base64.b64encode(content["picture"]).decode()
    chapter = "".join(
        [
            '<h1 id="masks">Masks<a class="headerlink" href="#masks">¶</a></h1>',
            content["button"],
            "<p>Built on " + content["link"] + ".</p>",
            *(_code(o) for o in content["outputs"]),
            f'<figure id="fig-masks"><img src="{src}" alt="two masks">'
            f"<figcaption>{content['caption']}</figcaption></figure>",
            f'<figure id="fig-grid" class="diagram">{DIAGRAM}'
            f"<figcaption>{content['diagram_caption']}</figcaption></figure>",
        ]
    )
    (root / "chapters/masks").mkdir(parents=True, exist_ok=True)
    (root / "chapters/masks/index.html").write_text(wrap(chapter, content["switch"]), "utf-8")
    home = "<h1>Home</h1><p>Start with " + content["home_link"] + ".</p>"
    home_switch = '<a href="./" hreflang="en">English</a><a href="zh/" hreflang="zh">中文</a>'
    (root / "index.html").write_text(wrap(home, home_switch), "utf-8")
    if content["copies"] is not None:
        (root / "_copies").mkdir()
        copies = root / "_copies/chapters--masks.json"
        copies.write_text(json.dumps(content["copies"]), "utf-8")
    if content["notebook"] is not None:
        notebook = root / "chapters/masks/masks.ipynb"
        notebook.write_text(json.dumps(content["notebook"]), "utf-8")
    if content["indexed"] is not None:
        if engine == "material":
            index = {"docs": [{"location": p, "title": p} for p in content["indexed"]]}
            (root / "search").mkdir()
            (root / "search/search_index.json").write_text(json.dumps(index), "utf-8")
        else:
            entries = [{"location": p + "#top", "level": 1} for p in content["indexed"]]
            (root / "search.json").write_text(json.dumps({"items": entries}), "utf-8")
    return root


def _differing(rows) -> dict[str, set[str]]:
    return {row.page: set(row.differs) for row in rows if row.differs}


def test_same_reader_content_in_two_engines_markup_compares_equal(tmp_path, capsys):
    a = write_site(tmp_path / "a", CONTENT, "material")
    b = write_site(tmp_path / "b", CONTENT, "zensical")
    assert (a / "index.html").read_text() != (b / "index.html").read_text()
    rows = compare_sites(a, b)
    assert [row.page for row in rows] == ["", "chapters/masks/"]
    assert _differing(rows) == {}
    assert main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    for check in CHECKS:
        assert f"{check:<10} 2/2 pages equal" in out


def test_what_is_read_from_a_page(tmp_path):
    """The views the comparison rests on hold the page's content, not nothing."""
    site = write_site(tmp_path / "a", CONTENT, "material")
    view = engine_compare.read_page(site, "chapters/masks/")
    assert view.outputs == CONTENT["outputs"]
    assert [(f[0], f[1]) for f in view.figures] == [("fig-masks", "6.1"), ("fig-grid", "6.2")]
    assert view.figures[0][3] == (engine_compare._digest(PICTURE),)
    assert view.links == [("chapters/attention/#heads", "chapter 7")]
    assert view.switch == [("en", "chapters/masks/"), ("zh", "zh/chapters/masks/")]
    assert view.notebook_links == ["chapters/masks/masks.ipynb"]
    assert engine_compare.page_copies(site, "chapters/masks/") == CONTENT["copies"]
    assert engine_compare.page_copies(site, "") is None
    notebooks = engine_compare.page_notebooks(site, "chapters/masks/")
    assert notebooks == {"masks.ipynb": [("code", "import torch\nprint(1)")]}
    assert engine_compare.SearchIndexes(site).holds("chapters/masks/")
    assert engine_compare.read_page(site, "chapters/nowhere/") is None


def _mutant(**changes) -> dict:
    return {**CONTENT, **changes}


MUTANTS = {
    "an output changed": (
        "outputs",
        _mutant(outputs=["device: cpu\n", "tensor([0.269, 0.731])\n"]),
    ),
    "outputs in another order": ("outputs", _mutant(outputs=CONTENT["outputs"][::-1])),
    "an output missing": ("outputs", _mutant(outputs=CONTENT["outputs"][:1])),
    "other picture bytes": ("figures", _mutant(picture=OTHER_PICTURE)),
    "a figure not numbered": (
        "figures",
        _mutant(caption='<span class="figure-number">Figure #</span> — Two masks.'),
    ),
    "a caption without its number": ("figures", _mutant(diagram_caption="A grid.")),
    "another caption": (
        "figures",
        _mutant(diagram_caption='<span class="figure-number">Figure 6.2</span> — A square.'),
    ),
    "a chapter link not numbered": (
        "links",
        _mutant(link='<a href="../attention/#heads">chapter #</a>'),
    ),
    "a chapter link elsewhere": (
        "links",
        _mutant(link='<a href="../attention/">chapter 7</a>'),
    ),
    "no copy texts": ("copies", _mutant(copies=None)),
    "another copy text": (
        "copies",
        _mutant(copies={"page": "chapters/masks/", "blocks": [{"index": 1, "code": "import os"}]}),
    ),
    "no notebook": ("notebooks", _mutant(notebook=None)),
    "another cell": (
        "notebooks",
        _mutant(notebook={"cells": [{"cell_type": "code", "source": "import torch"}]}),
    ),
    "no download button": ("notebooks", _mutant(button="")),
    "no language switch": ("switch", _mutant(switch="")),
    "switch to the other edition's home": (
        "switch",
        _mutant(
            switch='<a href="./" hreflang="en">English</a>'
            '<a href="../../zh/" hreflang="zh">简体中文</a>'
        ),
    ),
    "page not in the search index": ("search", _mutant(indexed=["", "chapters/attention/"])),
}


@pytest.mark.parametrize("name", MUTANTS)
def test_each_difference_in_reader_content_fails_its_check_on_its_page(tmp_path, name, capsys):
    check, content = MUTANTS[name]
    a = write_site(tmp_path / "a", CONTENT, "material")
    b = write_site(tmp_path / "b", content, "zensical")
    assert _differing(compare_sites(a, b)) == {"chapters/masks/": {check}}
    assert main([str(a), str(b)]) == 1
    assert f"{check:<10} 1/2 pages equal" in capsys.readouterr().out


def test_a_missing_search_index_fails_every_page(tmp_path):
    a = write_site(tmp_path / "a", CONTENT, "material")
    b = write_site(tmp_path / "b", _mutant(indexed=None), "zensical")
    assert _differing(compare_sites(a, b)) == {"": {"search"}, "chapters/masks/": {"search"}}


def test_a_page_one_site_lacks_differs_in_every_check(tmp_path):
    a = write_site(tmp_path / "a", CONTENT, "material")
    b = write_site(tmp_path / "b", CONTENT, "zensical")
    (a / "labs/lab").mkdir(parents=True)
    (a / "labs/lab/index.html").write_text(_material("<p>A lab.</p>", ""), "utf-8")
    (a / "labs/lab/lab.ipynb").write_text(json.dumps({"cells": []}), "utf-8")
    rows = compare_sites(a, b)
    assert _differing(rows) == {"labs/lab/": set(CHECKS)}
    assert _differing(compare_sites(a, b, skip=("labs/",))) == {}


def test_links_and_pictures_resolve_to_places_in_the_site(tmp_path):
    assert site_path("chapters/masks/", "../attention/#heads") == "chapters/attention/#heads"
    assert site_path("chapters/masks/", "../attention/index.html") == "chapters/attention/"
    assert site_path("chapters/masks/", "#fig-1") == "chapters/masks/#fig-1"
    assert site_path("", "zh/") == "zh/"
    assert site_path("chapters/masks/", "https://arxiv.org/abs/1706.03762") is None
    svg = b"<svg/>"
    assert picture_bytes(tmp_path, "", "data:image/svg+xml,%3Csvg/%3E") == svg
    encoded = "data:image/svg+xml;base64," + base64.b64encode(svg).decode()
    assert picture_bytes(tmp_path, "", encoded) == svg
    (tmp_path / "a b.svg").write_bytes(svg)
    assert picture_bytes(tmp_path, "chapters/x/", "../../a%20b.svg") == svg
    assert picture_bytes(tmp_path, "", "gone.png") == "missing: gone.png"
