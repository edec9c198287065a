"""What every page of the English edition looks like in headless Chromium, from the one visit
of every page (``page_reports``, tests/browser/visit.py): it renders cleanly (nothing from
another host, no console error, images loaded and described, formulas typeset, every code
block copyable), output boxes read as output, no box is cut off at 1280 px, no figure shows as
its ``repr``; and the chapter's screenshots in light and dark mode (``test-artifacts/``).
tests/browser/test_zh.py runs the same checks over the Chinese edition.
"""

from __future__ import annotations

import pytest

from .visit import (
    CHAPTER,
    LOAD_PICTURES_JS,
    VIEWPORT,
    _edition_pages,
    _fail_per_page,
    _new_context,
    _settle,
    _unchecked,
)


def test_every_page_renders_cleanly(page_reports, built_site, request):
    """Every page of the edition loads with nothing from another host, no console error,
    every image loaded and described, every formula typeset and every code block copyable
    (:data:`INSPECT_JS`, run in the one visit of :func:`page_reports`)."""
    every = _edition_pages(built_site.dir, request.module, chosen=False)
    prefix = "zh/" if getattr(request.module, "EDITION", "en") == "zh" else ""
    assert prefix in every and prefix + CHAPTER in every, f"page discovery is broken: {every}"
    pages = _edition_pages(built_site.dir, request.module)
    assert set(page_reports) == set(pages), "the browser pass did not visit every page"
    failures: dict[str, list[str]] = {}
    for rel in pages:
        report = page_reports[rel]
        problems = list(report["problems"])
        found = report.get("inspect") or {}
        problems += found.get("image", []) + found.get("math", []) + found.get("copy", [])
        if problems:
            failures["/" + rel] = list(dict.fromkeys(problems))  # dedupe, keep order
    report = "\n".join(
        f"{page}\n" + "\n".join(f"  - {p}" for p in problems) for page, problems in failures.items()
    )
    if failures:
        pytest.fail(
            f"{len(failures)} of {len(pages)} pages have problems "
            f"(checked: {', '.join('/' + p for p in pages)}):\n{report}",
            pytrace=False,
        )


@pytest.mark.parametrize(
    ("mode", "scheme"), [("light", "default"), ("dark", "slate")], ids=["light", "dark"]
)
def test_chapter_screenshot(browser, site_url, artifacts_dir, mode, scheme):
    """Full-page screenshots of the chapter; the palette follows prefers-color-scheme."""
    problems: list[str] = []  # reported by the test above; here only to keep off the network
    context = _new_context(browser, site_url, problems, color_scheme=mode)
    try:
        page = context.new_page()
        page.goto(site_url + CHAPTER)
        _settle(page)
        page.evaluate(LOAD_PICTURES_JS)  # the lazy figures below the fold too
        shot = artifacts_dir / f"sdpa-{mode}.png"
        page.screenshot(path=str(shot), full_page=True)
        got = page.evaluate("document.body.getAttribute('data-md-color-scheme')")
        background = page.evaluate(
            """() => {
              const [r, g, b] = getComputedStyle(document.body).backgroundColor
                .match(/[\\d.]+/g).map(Number);
              return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
            }"""
        )
    finally:
        context.close()
    assert got == scheme, f"{mode} mode: data-md-color-scheme is {got!r}, expected {scheme!r}"
    if mode == "dark":
        assert background < 0.25, f"dark mode background is not dark (luminance {background:.2f})"
    else:
        assert background > 0.75, f"light mode background is not light (luminance {background:.2f})"
    assert shot.stat().st_size > 10_000, f"{shot} looks empty"


def test_output_boxes_look_like_output(page_reports):
    """Every output box of an exec block (``div.exec-output``) follows its code box, is labelled,
    has no copy button and is styled unlike a code box; no Python block is followed by an
    unmarked text/pycon/console box; a block marked ``raises`` is followed by its error box."""
    found = {rel: _unchecked(r) + r["outputs"] for rel, r in page_reports.items()}
    _fail_per_page(found, "output boxes that do not read as output", len(found))


def test_no_code_box_is_cut_off(page_reports):
    """At a 1280x900 window every code box, output box and notebook cell shows its longest line
    whole: ``scrollWidth <= clientWidth`` (1 px of rounding allowed; notebook boxes measured with
    their wrapping turned off)."""
    found = {rel: _unchecked(r) + r["overflow"] for rel, r in page_reports.items()}
    _fail_per_page(found, f"boxes cut off at {VIEWPORT['width']} px", len(found))


def test_no_figure_shows_as_its_repr(page_reports):
    """No page's text holds ``<Figure size ...>``: every figure is drawn, not printed."""
    found = {rel: _unchecked(r) + r["figure"] for rel, r in page_reports.items()}
    _fail_per_page(found, "figures shown as text", len(found))
