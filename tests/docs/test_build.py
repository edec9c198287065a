"""The strict build, the reproducibility of its figures and its independence from other hosts."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from bs4 import BeautifulSoup, SoupStrainer

from site_tools.engine import program, store

from .conftest import DOCS, ROOT

EXTERNAL = re.compile(r"^(https?:)?//", re.IGNORECASE)


def test_strict_build_has_no_warnings(built_site):
    # --strict already turns MkDocs warnings into a failed build; this also
    # catches warnings that plugins log without failing it. (Lines from other
    # programs, such as the Jupyter kernel's own notices, are not MkDocs's.)
    warnings = [line for line in built_site.log.splitlines() if line.startswith("WARNING -")]
    assert warnings == []
    print(f"strict build: {built_site.seconds:.1f} s")


def _figures(output: str) -> list[bytes]:
    """The bytes of the figures a block printed, except plots of timings measured when
    the page ran (``figure_html(..., measured=True)``). The stored output holds them as
    data URIs; the built page references them as files named by the hash of these bytes
    (site_tools/engine/figure_files.py), so equal bytes are equal files."""
    soup = BeautifulSoup(output, "html.parser")
    images = soup.select("figure.built-figure:not(.measured) img")
    return [base64.b64decode(img["src"].split(",", 1)[1], validate=True) for img in images]


def _drawing_calls(page: Path) -> set[str]:
    """The drawing functions a page's program calls: matplotlib's (Axes, Figure, pyplot),
    the package's plotting helpers, and the site's figure makers."""
    import ast

    import matplotlib.axes
    import matplotlib.figure
    import matplotlib.pyplot as plt

    from attention_src import plotting

    known = {n for n in dir(matplotlib.axes.Axes) if not n.startswith("_")}
    known |= {n for n in dir(matplotlib.figure.Figure) if not n.startswith("_")}
    known |= {n for n in dir(plt) if not n.startswith("_")}
    known |= {n for n in dir(plotting) if not n.startswith("_")} | {"figure_html", "explorer_html"}
    known -= {"get", "set", "show", "close", "copy"}
    found = set()
    for block in program.page_program(page.read_text("utf-8")):
        try:
            tree = ast.parse(block.code)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                if name in known:
                    found.add(name)
    return found


def figure_sample(pages: list[Path]) -> list[Path]:
    """The fewest pages whose programs, together, call every drawing function any page
    with figures calls (greedy cover, in page order on ties)."""
    calls = {page: _drawing_calls(page) for page in pages}
    left = set().union(*calls.values())
    chosen: list[Path] = []
    while left:
        best = max(pages, key=lambda p: len(calls[p] & left))
        chosen.append(best)
        left -= calls[best]
    return sorted(chosen)


def test_figures_are_the_same_when_their_pages_run_again(built_site, tmp_path):
    # Figures must not change from one execution to the next. The build stored every
    # block's output (site_tools/engine/store.py); a sample of the pages that draw figures runs
    # again, each page's program in a fresh interpreter, into an empty store of its own
    # (no rendering, no notebooks: the cheapest second execution), and every figure they
    # print must be byte-identical to the stored one. (Whole outputs may differ: a few
    # print timings, and plot them in figures marked as measured.) The sample: the fewest
    # pages that together call every drawing function the figure pages call -- what can
    # make a figure's bytes differ is how it is drawn and saved (one save path,
    # site_tools/outputs/figures.py, for all); the code that computes what is drawn is seeded, and
    # the store's keys already re-run it when it changes.
    pages = sorted(p for p in DOCS.rglob("*.md") if "figure_html(" in p.read_text("utf-8"))
    assert len(pages) >= 15, "pages with figures not found"
    pages = figure_sample(pages)
    print(f"figures re-run on {len(pages)} pages: {[p.stem for p in pages]}")
    scratch = tmp_path / "store"
    env = dict(os.environ, ATTENTION_EXEC_STORE=str(scratch))
    workers = str(os.cpu_count() or 1)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "site_tools.engine.parallel",
            "--workers",
            workers,
            *map(str, pages),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    errors = {
        r["page"]: r["error"]
        for r in json.loads(proc.stdout.strip().splitlines()[-1])
        if r["error"]
    }
    assert errors == {}, f"pages whose program failed when run again: {errors}"
    counted, differ = 0, []
    for page in pages:
        text = page.read_text("utf-8")
        built, again = store.page_record(text), store.page_record(text, scratch)
        assert built is not None and again is not None, f"{page.name}: not in the store"
        assert again["keys"] == built["keys"], f"{page.name}: other keys"
        for index, key in enumerate(built["keys"]):
            first = _figures(store.read(key) or "")
            second = _figures(store.read(key, scratch) or "")
            counted += len(first)
            if first != second:
                differ.append(f"{page.relative_to(DOCS)}, block {index}")
    assert counted > 0, "no built figures found"
    assert differ == [], f"blocks whose figures changed when their page ran again: {differ}"


def test_pages_do_not_mention_the_folders_they_were_built_in(built_site):
    # An output that prints a path of the build machine changes with the checkout's
    # location (and once overflowed its code box on CI, where that path is longer).
    # The page's build may print paths; the built pages may not.
    places = {str(ROOT), str(built_site.dir), str(Path.home())}
    offenders = {}
    for page in built_site.dir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        found = sorted(place for place in places if place in text)
        if found:
            offenders[str(page.relative_to(built_site.dir))] = found
    assert offenders == {}, f"pages that print a folder of the machine that built them: {offenders}"


LOADED = {"script": "src", "link": "href", "img": "src", "iframe": "src"}  # tag: its URL


def _loads(page: str) -> list[tuple[str, str, str]]:
    """The URLs a page's tags load, ``(tag, attribute, url)``, in page order. Only those
    tags are parsed into a tree (the site's largest page is several MB). A ``<link>``
    loads only as a stylesheet or a preload."""
    soup = BeautifulSoup(page, "html.parser", parse_only=SoupStrainer(list(LOADED)))
    found = []
    for element in soup.find_all(list(LOADED)):
        rel = element.get("rel") or []
        if element.name == "link" and "stylesheet" not in rel and "preload" not in rel:
            continue  # canonical / alternate links are not loaded
        attr = LOADED[element.name]
        found.append((element.name, attr, element.get(attr) or ""))
    return found


def test_the_scan_of_loads_finds_each_kind():
    page = (
        '<link rel="canonical" href="https://example.org/a/">'
        '<link rel="stylesheet" href="https://cdn.example.org/x.css">'
        '<link rel="preload" href="//cdn.example.org/f.woff2" as="font">'
        '<script>var s = "<img src=https://example.org/not-a-tag.png>";</script>'
        '<script src="https://cdn.example.org/m.js"></script>'
        '<img src="../assets/a.svg" alt=""><img src="https://example.org/b.png" alt=""/>'
        '<iframe src="https://example.org/embed"></iframe>'
    )
    external = [(tag, url) for tag, _, url in _loads(page) if EXTERNAL.match(url)]
    assert external == [
        ("link", "https://cdn.example.org/x.css"),
        ("link", "//cdn.example.org/f.woff2"),
        ("script", "https://cdn.example.org/m.js"),
        ("img", "https://example.org/b.png"),
        ("iframe", "https://example.org/embed"),
    ]


def test_pages_load_nothing_from_other_hosts(built_site):
    offenders = []
    for page in built_site.dir.rglob("*.html"):
        for tag, attr, url in _loads(page.read_text(encoding="utf-8")):
            if EXTERNAL.match(url):
                offenders.append(f"{page.relative_to(built_site.dir)}: <{tag} {attr}={url}>")
    for css in built_site.dir.rglob("*.css"):
        for url in re.findall(r"url\(\s*['\"]?([^'\")]+)", css.read_text(encoding="utf-8")):
            if EXTERNAL.match(url):
                offenders.append(f"{css.relative_to(built_site.dir)}: url({url})")
    assert offenders == []


def test_figures_are_svg_files_with_alt_text(built_site):
    """A built figure is an SVG file of its edition's ``assets/figures/``, named by the hash
    of its bytes, that the page loads lazily at the size it gives (no layout shift)."""
    for edition in (built_site.dir, built_site.dir / "zh"):
        chapter = edition / "chapters" / "scaled-dot-product-attention" / "index.html"
        text = chapter.read_text(encoding="utf-8")
        figures = BeautifulSoup(text, "html.parser").select("figure.built-figure img")
        assert figures, f"{chapter}: the demonstration chapter should show a built figure"
        assert "data:image" not in text, f"{chapter}: a picture left inline"
        for img in figures:
            src = img["src"]
            assert re.fullmatch(r"\.\./\.\./assets/figures/[0-9a-f]{16}\.svg", src), src
            data = (chapter.parent / src).resolve().read_bytes()  # in this edition's folder
            assert hashlib.sha256(data).hexdigest()[:16] == Path(src).stem, src
            assert re.search(rb"<svg\b", data[:1000]), f"{src} is not an SVG"
            assert img["loading"] == "lazy", src
            assert int(img["width"]) > 100 and int(img["height"]) > 50, src
            assert len(img.get("alt", "").split()) >= 5, "alt text should say what the figure shows"


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


def test_labs_offer_their_notebook_for_download(built_site):
    """The labs say "download it (button at the top of the page)": the button is there
    and its relative link reaches the notebook the build copied next to the page."""

    labs = [p.parent for p in (built_site.dir / "labs").glob("*/index.html")]
    assert len(labs) >= 2, "the labs were not built"
    for lab in labs:
        soup = BeautifulSoup((lab / "index.html").read_text(encoding="utf-8"), "html.parser")
        link = soup.select_one("a.notebook-download")
        assert link is not None, f"{lab.name}: no download button"
        assert not EXTERNAL.match(link["href"]) and not link["href"].startswith("/")
        notebook = json.loads((lab / link["href"]).read_text(encoding="utf-8"))
        assert notebook["cells"], f"{lab.name}: the downloaded notebook is empty"


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
