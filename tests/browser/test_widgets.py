"""The widgets: the reader's own input, computed in the page, equal to PyTorch. Each widget
(tests/browser/widgets.py) is used in its page's one visit (``page_reports``,
tests/browser/visit.py) as a reader would, and its report checked here. tests/browser/test_zh.py
runs the same over the Chinese edition (the tokenizer's test set is the English visit's).
"""

from __future__ import annotations

import json

import pytest

from . import widget_minilm, widget_small, widget_wordpiece, widgets
from .visit import _fail_per_page, _unchecked


def _widget_run(page_reports, request, name: str) -> dict:
    """Widget ``name``'s report from its page's visit, in this module's edition."""
    zh = getattr(request.module, "EDITION", "en") == "zh"
    rel = ("zh/" if zh else "") + widgets.WHERE[name]
    if rel not in page_reports:
        pytest.skip(f"/{rel} not visited (BROWSER_PAGES)")
    report = page_reports[rel]
    assert not _unchecked(report), report["problems"]
    run = (report.get("widgets") or {}).get(name)
    assert run is not None, f"/{rel}: the visit found no {name} widget"
    assert "error" not in run, f"/{rel}: the {name} widget's driver failed: {run['error']}"
    return run


def test_every_widget_is_used_on_its_page(page_reports, request):
    """The visit found each widget of tests/browser/widgets.py on its own page and nowhere else,
    and drove it without an error."""
    zh = getattr(request.module, "EDITION", "en") == "zh"
    found = {}
    for rel, report in page_reports.items():
        problems = found.setdefault(rel, [])
        for name, run in (report.get("widgets") or {}).items():
            where = ("zh/" if zh else "") + widgets.WHERE[name]
            if rel != where:
                problems.append(f"a {name} widget, whose page is /{where}")
            elif "error" in run:
                problems.append(f"{name}: {run['error']}")
    for name, page in widgets.WHERE.items():
        rel = ("zh/" if zh else "") + page
        if rel in page_reports and not (zh and name in widgets.ENGLISH_ONLY):
            if name not in (page_reports[rel].get("widgets") or {}):
                found[rel].append(f"no {name} widget found")
    _fail_per_page(found, "widgets not where they belong or not usable", len(found))


def test_minilm_in_the_page_equals_pytorch(page_reports, request):
    """Chapter 18's "Your own sentence" (tests/browser/widget_minilm.py): in English, 21
    sentences' tokens, attention weights (2e-3) and sentence vectors against the chapter's
    MiniLM on the float32 weights, the form and the bad inputs' messages; in Chinese, a failed
    load's message, then the page's example through the form."""
    run = _widget_run(page_reports, request, "minilm")
    if getattr(request.module, "EDITION", "en") == "zh":
        widget_minilm.check_chinese(run)
    else:
        widget_minilm.check_english(run)


@pytest.mark.parametrize("name", sorted(widget_small.PAGES))
def test_small_model_in_the_page_equals_pytorch(page_reports, request, name):
    """Chapters 12 and 14's "Your own sequence" (tests/browser/widget_small.py): in English,
    20+ inputs' attention weights (1e-4) and symbols against the page's trained model, the
    size, the messages, a failed load; in Chinese, the words and the page's example."""
    run = _widget_run(page_reports, request, name)
    if getattr(request.module, "EDITION", "en") == "zh":
        widget_small.check_chinese(name, run)
    else:
        print(f"{name}: {json.dumps(widget_small.check_english(name, run), indent=1)}")


def test_page_tokenizer_equals_tokenizers(page_reports, request, built_site):
    """The real-encoder chapter's WordPiece equals `tokenizers` on the 592-text test set and
    the code-point sweep (tests/browser/widget_wordpiece.py); English visit only."""
    run = _widget_run(page_reports, request, "wordpiece")
    print(json.dumps(widget_wordpiece.check(run, built_site.dir), indent=2))
