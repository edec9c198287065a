"""What a reader copies runs.

The contract is the copy button. For every Python block and notebook code cell
of every built page, the text its copy button puts on the clipboard, pasted in
page order into one fresh interpreter per page, runs -- or raises exactly the
exception the page shows right after it. The build runs exactly those texts
once (``site_tools.engine.program``: a page is one program; the outputs the page shows
come from that run), and a block that fails fails the strict build. These
tests check what the build ran:

- the copy texts the build ran, written to ``site/_copies/<page>.json``, are
  what the built HTML's copy buttons hold, read the way the copy buttons read
  them (``site_tools.engine.copytext.page_copies``; ``tests/browser/test_copy_buttons.py``
  checks that a real browser's copy button gives the same text on every page);
- each page ran in a fresh interpreter, every block with the status the build
  recorded; the labs' notebook cells, which mkdocs-jupyter executes, run here
  (``site_tools.engine.copyrun``), and on CUDA, where present, every page runs again;
- every Python block on the built pages is run, apart from blocks marked to
  skip (with a reason; at most 5 % of all blocks);
- the copy is the code on the page: every shown line is in it, in order, and
  what a listing's copy adds is import lines and the private helpers its title
  bar names -- nothing that replaces the shown code.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from bs4 import BeautifulSoup

from site_tools.engine import copytext
from site_tools.engine.copyrun import run_page

from .pages import markdown_pages, read_page

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SOURCES = sorted([*DOCS.rglob("*.md"), *DOCS.rglob("*.ipynb")])


def page_url(source: Path) -> str:
    rel = source.relative_to(DOCS).with_suffix("").as_posix()
    return "" if rel == "index" else rel.removesuffix("/index") + "/"


def page_id(source: Path) -> str:
    return source.relative_to(DOCS).as_posix()


def built_html(site: Path, source: Path) -> Path:
    return site / page_url(source) / "index.html"


def copies_file(site: Path, source: Path) -> Path:
    name = page_url(source).strip("/").replace("/", "--") or "index"
    return site / copytext.COPY_DIR / f"{name}.json"


def _build_report(path: Path) -> dict | None:
    """What the build's run of the page's program did, as ``copyrun`` reports it (None
    for a page the build did not run: a notebook's cells, read from its HTML)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not all("status" in b for b in data["blocks"]):
        return None
    blocks = [
        {"index": b["index"], "status": b["status"], "why": b["skip"], "error": b.get("error")}
        for b in data["blocks"]
    ]
    return {"page": data["page"], "device": "cpu", "blocks": blocks}


def _run_all(site: Path, device: str) -> dict[str, dict]:
    files = {page_id(s): copies_file(site, s) for s in SOURCES}
    present = {k: f for k, f in files.items() if f.exists()}
    reports = {}
    if device == "cpu":
        for name, path in list(present.items()):
            report = _build_report(path)
            if report is not None:
                reports[name] = report
                del present[name]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        ran = pool.map(lambda item: (item[0], run_page(item[1], device)), present.items())
        reports.update(ran)
    return reports


@pytest.fixture(scope="module", params=["cpu", "cuda"])
def reports(request, built_site) -> tuple[str, dict[str, dict]]:
    """On the CPU, what the build's run did (the notebooks' cells run here); on CUDA,
    every page's copy texts run again, in a fresh interpreter per page."""
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device: the pages ran on the CPU only")
    return request.param, _run_all(built_site.dir, request.param)


@pytest.mark.parametrize("source", SOURCES, ids=page_id)
def test_what_the_reader_copies_runs(source, reports):
    device, by_page = reports
    report = by_page.get(page_id(source))
    if report is None:
        pytest.skip(f"{page_id(source)} has no Python block")
    assert not report.get("crashed"), report.get("crashed")
    failed = [b for b in report["blocks"] if b["status"] == "failed"]
    if failed:
        pytest.fail(
            f"{page_id(source)} on {device}: {len(failed)} of {len(report['blocks'])} "
            "copied blocks fail:\n"
            + "\n".join(f"--- block {b['index']}:\n{b['error']}" for b in failed),
            pytrace=False,
        )


def _python_blocks(html: str) -> int:
    """Python code blocks and notebook code cells on a built page (counted with
    BeautifulSoup, independently of the extraction under test)."""
    soup = BeautifulSoup(html, "html.parser")
    count = 0
    for block in soup.select("div.language-python.highlight"):
        if block.find_parent("div", class_="doc-object"):  # mkdocstrings signatures, sources
            continue
        count += 1
    return count + len(soup.select("clipboard-copy[for]"))


def test_copy_files_hold_what_the_html_holds(built_site):
    checked = 0
    for source in SOURCES:
        html = built_html(built_site.dir, source).read_text(encoding="utf-8")
        blocks = copytext.page_copies(html)
        path = copies_file(built_site.dir, source)
        if not blocks:
            assert not path.exists(), f"{path} written for a page without code"
            continue
        written = json.loads(path.read_text(encoding="utf-8"))["blocks"]
        assert [b["code"] for b in written] == [b.code for b in blocks], page_id(source)
        checked += 1
    assert checked >= 15, f"only {checked} pages have copy files"


def test_every_block_on_the_pages_is_run(built_site, reports):
    device, by_page = reports
    total = skipped = 0
    mismatches = []
    for source in SOURCES:
        html = built_html(built_site.dir, source).read_text(encoding="utf-8")
        on_page = _python_blocks(html)
        report = by_page.get(page_id(source), {"blocks": []})
        ran = [b for b in report["blocks"] if b["status"] in {"ok", "raised as shown"}]
        marked = [b for b in report["blocks"] if b["status"] == "skipped"]
        assert all(b["why"].strip() for b in marked), f"{page_id(source)}: a skip needs a reason"
        if len(ran) + len(marked) != on_page:
            mismatches.append(
                f"{page_id(source)}: {on_page} blocks on the page, "
                f"{len(ran)} ran and {len(marked)} are marked to skip"
            )
        total += on_page
        skipped += len(marked)
    assert not mismatches, "\n".join(mismatches)
    assert total > 400, f"only {total} Python blocks found on the built pages"
    assert skipped <= 0.05 * total, f"{skipped} of {total} blocks are marked to skip (limit 5 %)"
    print(f"{device}: {total} copied blocks, {total - skipped} run, {skipped} marked to skip")


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.rstrip().splitlines()]


def test_the_copy_is_the_code_on_the_page(built_site):
    """Every shown line is in the copy, in order; a listing's copy adds only
    import lines and the definitions of the helpers its title bar names."""
    problems = []
    listings = 0
    for source in SOURCES:
        html = built_html(built_site.dir, source).read_text(encoding="utf-8")
        soup = BeautifulSoup(html, "html.parser")
        notes = [n.get_text() for n in soup.select("div.listing span.copy-note")]
        listing_blocks = [b for b in copytext.page_copies(html) if b.listing]
        assert len(notes) == len(listing_blocks), page_id(source)
        for block in copytext.page_copies(html):
            where = block.where(page_id(source))
            if not block.code.strip():
                problems.append(f"{where}: empty copy")
            if not block.listing:
                if _lines(block.code) != _lines(block.shown):
                    problems.append(f"{where}: the copy differs from the shown code")
                continue
            listings += 1
            copy, shown = _lines(block.code), _lines(block.shown)
            starts = [
                i for i in range(len(copy) - len(shown) + 1) if copy[i : i + len(shown)] == shown
            ]
            if not starts:
                problems.append(f"{where}: the shown lines are not in the copy, in order")
                continue
            module = block.listing[:-3].replace("/", ".")
            module_source = (ROOT / block.listing).read_text(encoding="utf-8")
            before = "\n".join(copy[: starts[-1]])
            after = "\n".join(copy[starts[-1] + len(shown) :]).strip("\n")
            for node in ast.parse(before).body:
                if isinstance(node, ast.Import | ast.ImportFrom):
                    continue
                name = getattr(node, "name", None) or ast.unparse(node).split("=")[0].strip()
                text = ast.get_source_segment(before, node)
                if not name.startswith("_") or text not in module_source:
                    problems.append(f"{where}: the copy adds {name!r}, not a helper of {module}")
            if after and after not in module_source:
                problems.append(f"{where}: the lines after the listing are not the module's")
        for note, block in zip(notes, listing_blocks, strict=True):
            module = block.listing[:-3].replace("/", ".")
            expected = copytext.listing_copy(block.shown, module)
            assert block.code == expected.text, block.where(page_id(source))
            named = {w.strip(" ,():") for w in note.split()}
            if not set(expected.helpers) | set(expected.methods) <= named:
                problems.append(f"{block.where(page_id(source))}: the note says {note!r}")
    assert listings >= 40, f"only {listings} listings found"
    assert not problems, "\n".join(problems)


def test_every_listing_copy_runs_alone(built_site):
    """A listing's copy needs nothing from the page: no free name is left, and it
    runs in a fresh namespace -- so a region whose copy would raise NameError
    fails here even if the page never calls it."""
    listings = {}
    for source in SOURCES:
        html = built_html(built_site.dir, source).read_text(encoding="utf-8")
        for block in copytext.page_copies(html):
            if block.listing:
                where = block.where(page_id(source))
                left = copytext.free_names(block.code)
                assert not left, f"{where}: the copy uses {sorted(left)} without defining them"
                listings[where] = block.code
    script = (
        "import json, sys\n"
        "failed = {}\n"
        "for where, code in json.load(sys.stdin).items():\n"
        "    try:\n"
        "        exec(compile(code, where, 'exec'), {'__name__': '__main__'})\n"
        "    except Exception as exc:\n"
        "        failed[where] = repr(exc)\n"
        "print(json.dumps(failed))\n"
    )
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(listings),
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    failed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert failed == {}


@pytest.mark.parametrize("path", markdown_pages(), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_fences_are_written_so_that_the_build_sees_them(path):
    """Fences that tools would silently miss (``~~~``, ```` ```py ````) or output typed by hand."""
    problems = read_page(path).problems
    assert not problems, "\n".join(problems)


FIGURE_CALLS = {"figure_html", "explorer_html"}
FIGURE_WORDS_IN_CODE = re.compile(r"<figcaption|\balt=")


def figure_words_in_code(code: str) -> list[str]:
    """Captions or alt texts written inside executed code (they belong in the Markdown)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            words = [k.arg for k in node.keywords if k.arg in ("alt", "caption")]
            if name in FIGURE_CALLS and words:
                found.append(f"line {node.lineno}: {name}(..., {'=, '.join(words)}=...)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if FIGURE_WORDS_IN_CODE.search(node.value):
                found.append(f"line {node.lineno}: a string holding HTML figure text")
    return found


@pytest.mark.parametrize("path", markdown_pages(), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_figure_captions_and_alt_texts_are_prose_not_code(path):
    """The code that draws a figure is the same in every edition: its words are the
    Markdown paragraphs after the block (``site_tools/outputs/figures.py``), never strings
    inside executed code. (The chapter template is built by test_new_chapter.)"""
    offenders = [
        f"{block.where()}, {problem}"
        for block in read_page(path).blocks
        if block.executed_by_build
        for problem in figure_words_in_code(block.code)
    ]
    assert offenders == [], "\n".join(offenders)


def test_the_figure_words_check_sees_both_ways_of_writing_them():
    assert figure_words_in_code('print(figure_html(fig, alt="a", id="fig-x"))')
    assert figure_words_in_code('print(explorer_html(t, w, id="fig-x", caption="c"))')
    assert figure_words_in_code('print(f"<figure><figcaption>{c}</figcaption></figure>")')
    assert figure_words_in_code('print(f"<img src={s} alt={a}>")')
    assert not figure_words_in_code('print(figure_html(fig, id="fig-x"))')


def test_readme_snippets_run(tmp_path):
    """The README's Python blocks, copied from GitHub, run in a fresh interpreter."""
    blocks = [
        {"index": i, "code": b.code, "raises": b.raises, "skip": b.skip_reason}
        for i, b in enumerate(read_page(ROOT / "README.md").blocks, start=1)
    ]
    assert blocks, "the README shows no Python block"
    path = tmp_path / "readme.json"
    path.write_text(json.dumps({"page": "README.md", "blocks": blocks}), encoding="utf-8")
    report = run_page(path, "cpu")
    assert not report.get("crashed"), report.get("crashed")
    assert [b["status"] for b in report["blocks"]] == ["ok"] * len(blocks), report
