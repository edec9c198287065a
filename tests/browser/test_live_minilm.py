"""Chapter 18's MiniLM widget where the browser pass cannot take it: JavaScript off, and
the page opened from file://.

Everything the widget computes and shows with JavaScript on, over http:// -- tokens and
attention weights equal to PyTorch's, the form, the bad inputs, a failed load, the audit with
a result on the page -- is checked in the page's one visit of the browser pass
(tests/browser/widget_minilm.py, run by test_widgets.py and test_zh.py). These two need
a browser context of their own: one with JavaScript disabled, one on a file:// URL.
"""

from __future__ import annotations

from .widget_minilm import PAGE, WIDGET_JS


def test_without_javascript_and_from_file_the_page_says_so(browser, site_url, built_site):
    """JavaScript off: the paragraph that says what the box adds stays, and the build's
    figures above it show. From file://: the box says at once that Chromium will not fetch
    the model there (before the reader presses anything), and nothing is requested."""
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(site_url + PAGE)
        nojs = page.locator(".live-minilm .live-nojs")
        assert nojs.count() == 1 and nojs.is_visible()
        assert "needs JavaScript" in nojs.inner_text()
        assert page.locator("figure.attention-explorer .ae-fallback img").count() == 2
    finally:
        context.close()
    requests: list[str] = []
    context = browser.new_context()
    try:
        context.on("request", lambda r: requests.append(r.url))
        page = context.new_page()
        page.goto((built_site.dir / PAGE / "index.html").as_uri())
        page.wait_for_load_state("load")
        widget = page.evaluate(WIDGET_JS)
    finally:
        context.close()
    assert widget["ready"], widget
    assert "file://" in widget["error"] and "http://" in widget["error"], widget["error"]
    assert not [u for u in requests if "assets/live/" in u], "the model was fetched unasked"
