"""The copy buttons of every page, from the one visit of every page (``page_reports``,
tests/browser/visit.py): each copies exactly the text the build ran (``_copies``, by hash),
holding the lines its block shows, folded or not; and a real click's copy is what lands on the
clipboard (Material's buttons, a notebook cell's, a folded block's after a click opens it).
tests/browser/test_zh.py runs the first over the Chinese edition.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from site_tools.engine.copytext import COPY_DIR, page_copies
from tests.site.test_codeblocks import _python_blocks

from .visit import (
    COPY_BUTTON,
    COPY_INIT_JS,
    FOLDED_PAGE,
    _fail_per_page,
    _new_context,
    _settle,
    _unchecked,
)


def _in_order(needles: list[str], haystack: list[str]) -> str | None:
    """The first of ``needles`` that is not in ``haystack`` after the previous one, else None."""
    at = 0
    for needle in needles:
        try:
            at = haystack.index(needle, at) + 1
        except ValueError:
            return needle
    return None


def _first_difference(a: str, b: str) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for n, (x, y) in enumerate(zip(la, lb, strict=False), start=1):
        if x != y:
            return f"line {n}: copied {x!r}, extracted {y!r}"
    return f"copied {len(la)} lines, extracted {len(lb)}"


def _stored_copies(site: Path, rel: str) -> list[str]:
    """The copy texts the build ran for the page (``_copies/<page>.json`` of its edition)."""
    edition, url = (site / "zh", rel[3:]) if rel.startswith("zh/") else (site, rel)
    name = url.strip("/").replace("/", "--") or "index"
    path = edition / COPY_DIR / f"{name}.json"
    if not path.exists():
        return []
    return [b["code"] for b in json.loads(path.read_text(encoding="utf-8"))["blocks"]]


def _digest(text: str) -> str:
    return hashlib.sha256(text.rstrip().encode()).hexdigest()[:16]


def test_copy_buttons_copy_what_the_build_ran(page_reports, built_site):
    """Each copy button, clicked, copies exactly the text the build ran as the page's program
    (``site_tools/engine/program.py``, written to ``_copies``), compared by hash, block by block in
    page order; the blocks are counted in the built HTML by a parse of its own (BeautifulSoup),
    not the build's; no copy is empty, and each holds the lines its block shows, in order. A block
    folded on load is copied open, as a reader opens it to copy; closed, its button is hidden, or
    copies the same text."""
    found: dict[str, list[str]] = {}
    for rel, report in page_reports.items():
        problems = found.setdefault(rel, _unchecked(report))
        if report["copies"] is None:
            continue
        html_text = (built_site.dir / rel / "index.html").read_text(encoding="utf-8")
        counted = _python_blocks(html_text)
        stored = _stored_copies(built_site.dir, rel)
        copies = report["copies"]
        if not len(copies) == counted == len(stored):
            problems.append(
                f"{len(copies)} copy buttons' blocks in the browser, {counted} Python blocks in "
                f"the HTML, {len(stored)} copy texts the build ran"
            )
        for n, (got, code) in enumerate(zip(copies, stored, strict=False), start=1):
            where = f"block {n} ({got['kind']})"
            if not got["button"]:
                problems.append(f"{where} has no copy button")
                continue
            if got["copied"] is None:
                problems.append(f"{where}: its copy button copied nothing")
                continue
            copied = got["copied"].rstrip()
            if not copied:
                problems.append(f"{where}: the copy is empty")
            elif _digest(copied) != _digest(code):
                problems.append(
                    f"{where}: the copy is not the text the build ran "
                    f"(sha256 {_digest(copied)} vs {_digest(code)}): "
                    + _first_difference(copied, code.rstrip())
                )
            missing = _in_order(
                [line.rstrip() for line in got["shown"].splitlines()],
                [line.rstrip() for line in copied.splitlines()],
            )
            if missing is not None:
                problems.append(f"{where}: the copy lacks the shown line {missing!r} (in order)")
            closed = (got.get("copied_closed") or "").rstrip()
            if got.get("folded") and got.get("visible_closed") and closed != copied:
                problems.append(
                    f"{where}, folded: its button can be pressed with the block closed, and "
                    "copies another text then: " + _first_difference(closed, copied)
                )
    blocks = sum(len(r["copies"] or ()) for r in page_reports.values())
    assert blocks > 0, "no copy button found on any page: the block discovery is broken"
    folded = sum(1 for r in page_reports.values() for b in (r["copies"] or ()) if b.get("folded"))
    assert folded > 0, "no folded block found on any page: the fold discovery is broken"
    _fail_per_page(found, "copy buttons that do not copy what the build ran", len(found))


def test_recorded_copy_is_what_the_clipboard_gets(browser, site_url, built_site):
    """The record of COPY_INIT_JS is what lands on the real clipboard, for a real mouse click on a
    listing's copy button (Material), on a notebook cell's (mkdocs-jupyter), and on the button of
    a folded "Going further" block after a click has opened it, as a reader does."""
    folded = f"details.note:has(div.language-python) div.language-python :is({COPY_BUTTON})"
    cases = [
        ("chapters/masks/", None, f"div.language-python.highlight.listing :is({COPY_BUTTON})"),
        ("labs/scaled-dot-product-lab/", None, ".md-content clipboard-copy"),
        (FOLDED_PAGE, "details.note:has(div.language-python) > summary", folded),
    ]
    problems: list[str] = []
    context = _new_context(
        browser, site_url, problems, permissions=["clipboard-read", "clipboard-write"]
    )
    context.add_init_script(COPY_INIT_JS)
    results = []
    try:
        page = context.new_page()
        for rel, opener, selector in cases:
            page.goto(site_url + rel)
            _settle(page)
            page.evaluate("navigator.clipboard.writeText('')")
            page.evaluate("window.__copies = []")
            if opener:  # a folded block: closed on load, opened by a click on its summary
                assert not page.locator(selector).first.is_visible(), f"/{rel}: not folded"
                page.locator(opener).first.click()
            page.locator(selector).first.click()
            page.wait_for_function("window.__copies.length > 0")
            page.wait_for_function("async () => (await navigator.clipboard.readText()) !== ''")
            clipboard = page.evaluate("navigator.clipboard.readText()")
            recorded = page.evaluate("window.__copies[window.__copies.length - 1]")
            results.append((rel, clipboard, recorded))
    finally:
        context.close()
    for rel, clipboard, recorded in results:
        assert clipboard.strip(), f"/{rel}: the click put nothing on the clipboard"
        assert recorded == clipboard, (
            f"/{rel}: recorded {recorded[:80]!r}, clipboard {clipboard[:80]!r}"
        )
        extracted = page_copies((built_site.dir / rel / "index.html").read_text(encoding="utf-8"))
        assert clipboard.rstrip() in {b.code.rstrip() for b in extracted}, (
            f"/{rel}: the clipboard holds no block's extracted copy: {clipboard[:80]!r}"
        )
