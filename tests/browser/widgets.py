"""The page's widgets, exercised in the page's one visit of the browser pass.

:func:`run` is a check of tests/browser/visit.py's :data:`PAGE_CHECKS`: on every page it
looks for each widget of :data:`WIDGETS` (a CSS selector) and, where the page has one, uses it
as a reader would (its driver types, presses and waits, and has the page compute), returning
what the page showed and computed for the tests to compare with PyTorch. It runs before the
visit's accessibility audit, so a page with a widget is audited with the reader's result on it.

A driver that fails does not stop the visit's other checks: its error is the widget's report.
A request a driver makes fail on purpose (a model file that does not load) goes into the
visit's ``deliberate`` set, which the visit's problem listeners leave out.
"""

from __future__ import annotations

from . import widget_minilm, widget_small, widget_wordpiece

# name -> (selector, driver(page, zh, deliberate) -> report)
WIDGETS = {
    "minilm": (".live-minilm", widget_minilm.drive),
    "wordpiece": (".live-minilm", widget_wordpiece.drive),
    **{
        name: (
            f'[data-live-small="{name}"]',
            lambda page, zh, deliberate, name=name: widget_small.drive(page, name, zh, deliberate),
        )
        for name in sorted(widget_small.PAGES)
    },
}

# Where each widget is, per edition: a widget that disappears from its page fails the tests.
WHERE = {
    "minilm": widget_minilm.PAGE,
    "wordpiece": widget_minilm.PAGE,
    **widget_small.PAGES,
}
ENGLISH_ONLY = {"wordpiece"}  # the tokenizer's test set needs one page, not one per edition


def run(page, deliberate: set[str]) -> dict[str, dict]:
    """{widget name: its driver's report, or {"error": …}} for the widgets on ``page``."""
    zh = "/zh/" in page.url
    found = page.evaluate(
        "(selectors) => selectors.map((s) => document.querySelector(s) !== null)",
        [selector for selector, _ in WIDGETS.values()],
    )
    out: dict[str, dict] = {}
    for (name, (_, drive)), present in zip(WIDGETS.items(), found, strict=True):
        if not present or (zh and name in ENGLISH_ONLY):
            continue
        try:
            out[name] = drive(page, zh, deliberate)
        except Exception as exc:  # the visit's other checks still run
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out
