"""Accessibility and weight, from the one visit of every page (``page_reports``,
tests/browser/visit.py): axe-core's WCAG 2.0 and 2.1 A and AA audit in light and dark at 1280
and 390 px, and what a first visit weighs. tests/browser/test_zh.py runs the same over the
Chinese edition; tests/browser/test_a11y_units.py checks the audit's helpers themselves.
"""

from __future__ import annotations

from . import a11y
from .visit import _fail_per_page, _unchecked


def test_every_page_passes_the_accessibility_audit(page_reports):
    """axe-core 4.14.1 (vendored), the WCAG 2.0 and 2.1 A and AA rules, no rule disabled and
    nothing excluded: no violation on any page of either edition, in light and dark, at
    1280 and 390 px (run in the page's one visit, :data:`PAGE_CHECKS`)."""
    found: dict[str, list[str]] = {}
    for rel, report in page_reports.items():
        items = found.setdefault(rel, _unchecked(report))
        for variant, violations in (report.get("axe") or {}).items():
            for v in violations:
                targets = ", ".join(v["targets"][:3]) + (" …" if len(v["targets"]) > 3 else "")
                items.append(f"{variant}: {v['id']} ({v['impact']}, {len(v['targets'])}): "
                             f"{targets} — {v['message']}")  # fmt: skip
        if report.get("axe") is None and not items:
            items.append("not audited")
    _fail_per_page(found, "accessibility violations", len(found))


def test_first_visits_are_light(page_reports, built_site):
    """A first visit (a fresh browser context, every response's body at gzip level 6): the
    median page within 300 KB, every page within 1 MB, and no page's HTML over 1 MB."""
    weights = {rel: r["weight"]["total"] for rel, r in page_reports.items() if r.get("weight")}
    assert len(weights) == len(page_reports), "a page was not weighed"
    heavy = {rel: w for rel, w in weights.items() if w > a11y.BUDGET_PAGE}
    median = sorted(weights.values())[len(weights) // 2]
    html = {rel: (built_site.dir / rel / "index.html").stat().st_size for rel in page_reports}
    large = {rel: size for rel, size in html.items() if size > a11y.BUDGET_HTML}
    heaviest = max(weights, key=weights.get)
    print(f"first visit, gzip: median {median / 1024:.0f} KB, "
          f"max {weights[heaviest] / 1024:.0f} KB (/{heaviest})")  # fmt: skip
    assert median <= a11y.BUDGET_MEDIAN, f"median first visit {median} B"
    assert heavy == {}, f"pages over {a11y.BUDGET_PAGE} B: {heavy}"
    assert large == {}, f"pages whose HTML is over {a11y.BUDGET_HTML} B: {large}"
