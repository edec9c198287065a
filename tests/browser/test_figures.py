"""Pictures, captions and one numbering (the reading experience), from the one visit of every
page (``page_reports``, tests/browser/visit.py): a chapter shows a picture near its top, every
picture has its numbered caption and is shown at its size, a chapter has one number and one
name, and no number in the prose is typed by hand. tests/browser/test_zh.py runs the checks of
every page (not the chapter-only ones) over the Chinese edition.
"""

from __future__ import annotations

import re

from .visit import _fail_per_page, _unchecked

FIRST_FIGURE_PX = 2500  # a chapter shows a picture within its first screens
MIN_SHOWN = 0.8  # no figure shown below 80 % of the width it was drawn at


def _chapters(page_reports) -> dict[str, dict]:
    return {rel: r for rel, r in page_reports.items() if rel.startswith("chapters/")}


def test_every_chapter_shows_a_picture_near_its_top(page_reports):
    """On every chapter page a figure (a diagram or a built figure) starts within
    :data:`FIRST_FIGURE_PX` px of the top of the article, at 1280 px, nothing opened."""
    found = {}
    for rel, r in _chapters(page_reports).items():
        top = (r.get("figures") or {}).get("firstFigureTop")
        problems = _unchecked(r)
        if top is None:
            problems.append("no visible figure")
        elif top > FIRST_FIGURE_PX:
            problems.append(f"the first figure starts {top:.0f} px down")
        found[rel] = problems
    _fail_per_page(
        found, f"chapters with no picture in their first {FIRST_FIGURE_PX} px", len(found)
    )


def test_every_figure_has_a_numbered_caption(page_reports):
    """Every picture on a page (math, icons and notebook cells aside) sits in a ``<figure>`` with a
    ``<figcaption>``; the build numbers the figures of chapter N "Figure N.1 — ", "Figure N.2 — ", …
    in page order, from the chapter's number in the nav."""
    found = {}
    for rel, r in page_reports.items():
        info = r.get("figures") or {}
        problems = _unchecked(r) + [
            f"outside a captioned <figure>: {x}" for x in info.get("loose", [])
        ]
        match = re.match(r"(\d+)\. ", info.get("navTitle") or "")
        word = "图" if rel.startswith("zh/") else "Figure"  # the Chinese edition: 图 N.k
        for k, fig in enumerate(info.get("captions", []), start=1):
            want = f"{match.group(1)}.{k}" if match else str(k)
            if fig["caption"] is None:
                problems.append(f"figure {fig['id'] or k} has no caption")
            elif fig["number"] != want or not fig["caption"].startswith(f"{word} {want} — "):
                problems.append(
                    f"figure {fig['id'] or k} is numbered {fig['number']!r}, caption "
                    f"{fig['caption']!r}; expected {word} {want}"
                )
        found[rel] = problems
    _fail_per_page(found, "figures without their numbered caption", len(found))


def test_no_figure_is_shown_smaller_than_drawn(page_reports):
    """At a 1280 px window no figure's picture is shown below :data:`MIN_SHOWN` of the width it was
    drawn at (an ``<img>``'s natural width, an inline SVG's viewBox), so its text stays legible."""
    found = {}
    for rel, r in page_reports.items():
        problems = _unchecked(r)
        for size in r.get("sizes", []):
            if size.get("unloaded"):
                problems.append(f"{size['id']}: its picture did not load when scrolled to")
            elif size["drawn"] and size["shown"] < MIN_SHOWN * size["drawn"]:
                problems.append(
                    f"{size['id']}: drawn {size['drawn']:.0f} px wide, shown at "
                    f"{size['shown']:.0f} px ({size['shown'] / size['drawn']:.0%})"
                )
        found[rel] = problems
    _fail_per_page(found, f"figures shown below {MIN_SHOWN:.0%} of their size", len(found))


def test_chapters_have_one_number_and_one_name(page_reports):
    """Every chapter's nav entry is numbered ("6. Masks"), and its ``<h1>`` is the nav title
    without the number; the browser title is the nav title."""
    found = {}
    for rel, r in _chapters(page_reports).items():
        info = r.get("figures") or {}
        problems = _unchecked(r)
        nav, h1 = info.get("navTitle") or "", info.get("h1")
        match = re.match(r"(\d+)\. (.+)$", nav)
        if not match:
            problems.append(f"nav title {nav!r} has no number")
        elif h1 != match.group(2):
            problems.append(f"<h1> {h1!r} is not the nav title {match.group(2)!r}")
        found[rel] = problems
    _fail_per_page(found, "chapters whose number or name disagree", len(found))


def test_numbers_in_the_prose_come_from_the_build(page_reports):
    """No link keeps an unfilled ``#`` (``[chapter #](masks.md)`` is filled from the nav,
    ``[figure #](#fig-…)`` from the figure's number), and no prose outside links and code types a
    chapter or figure number ("chapter 7"), which would go stale when chapters move."""
    found = {}
    for rel, r in page_reports.items():
        info = r.get("figures") or {}
        found[rel] = (
            _unchecked(r)
            + [f"unfilled reference {x}" for x in info.get("unresolved", [])]
            + [f"typed number: ...{x}..." for x in info.get("stale", [])]
        )
    _fail_per_page(found, "numbers not made by the build", len(found))
