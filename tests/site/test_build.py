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

from .build import DOCS, ROOT

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
