"""Open every page of the built site in headless Chromium and check that it renders cleanly.

The site is served from ``127.0.0.1``; every request to any other origin is aborted (so the test
never touches the network) and reported as a failure, because the site must read offline.  Per
page the test checks console errors, uncaught exceptions, failed requests and HTTP errors,
images (loaded, with alt text), math (every formula typeset by KaTeX, no raw delimiters left)
and copy buttons on code blocks.  It also saves full-page screenshots of the scaled dot-product
attention chapter in light and dark mode to ``test-artifacts/``.

Needs Playwright for Python (the ``test`` extra) and a Chromium executable, e.g. Debian's
``chromium``; never ``playwright install``.  Without either, the tests are skipped.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Belt and braces behind the request routing below: no host name resolves, so nothing the
    # routing might miss (a worker, a prefetch) can reach the network either.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
VIEWPORT = {"width": 1280, "height": 900}
TIMEOUT_MS = 15_000
BATCH = 8  # pages open at once
CHAPTER = "chapters/scaled-dot-product-attention/"
SKIP_DIRS = {"assets", "search"}  # theme assets and the search index, not pages

# Notes when the DOM last changed (Material adds copy buttons, KaTeX typesets formulas) ...
SETTLE_INIT_JS = """
window.__lastChange = performance.now();
new MutationObserver(() => { window.__lastChange = performance.now(); })
  .observe(document, {childList: true, subtree: true, characterData: true});
"""
# ... so that the test can wait until it has been quiet for a moment.
SETTLE_JS = """() => document.readyState === 'complete'
  && performance.now() - window.__lastChange > 200"""

# Returns {category: [problem, ...]} for the DOM of the loaded page.
INSPECT_JS = r"""async () => {
  const out = {image: [], math: [], copy: []};
  const short = (s, n = 80) => {
    s = (s || '').replace(/\s+/g, ' ').trim();
    return s.length > n ? s.slice(0, n) + '…' : s;
  };

  // Images: loaded and described.
  const imgs = [...document.images];
  for (const img of imgs) if (img.loading === 'lazy') img.loading = 'eager';
  await Promise.all(imgs.map((img) => img.complete ? null : new Promise((done) => {
    img.addEventListener('load', done, {once: true});
    img.addEventListener('error', done, {once: true});
    setTimeout(done, 5000);
  })));
  for (const img of imgs) {
    const src = img.currentSrc || img.getAttribute('src') || '';
    const name = src.startsWith('data:') ? short(src, 30) : src;
    if (!(img.complete && img.naturalWidth > 0)) out.image.push(`<img> did not load: ${name}`);
    if (!(img.getAttribute('alt') || '').trim()) out.image.push(`<img> has no alt text: ${name}`);
  }

  // Math: every arithmatex formula typeset, no KaTeX errors, no raw delimiters left over.
  for (const el of document.querySelectorAll('.arithmatex')) {
    if (!el.querySelector('.katex')) out.math.push(`formula not typeset: ${short(el.textContent)}`);
  }
  for (const el of document.querySelectorAll('.katex-error')) {
    out.math.push(`KaTeX error: ${short(el.getAttribute('title') || el.textContent, 160)}`);
  }
  // With throwOnError: false, KaTeX typesets an unknown command as red text instead of failing.
  for (const el of document.querySelectorAll('.katex-mathml mstyle[mathcolor="#cc0000"] > mtext')) {
    if (el.textContent.startsWith('\\')) out.math.push(`KaTeX unknown command: ${el.textContent}`);
  }
  const prose = (el) => {  // visible text that is neither code nor typeset math
    const copy = el.cloneNode(true);
    copy.querySelectorAll('.katex, .arithmatex, pre, code, script, style')
      .forEach((n) => n.remove());
    return copy.textContent;
  };
  const isNotebook = !!document.querySelector('.jupyter-wrapper, .jp-Notebook');
  const delims = [['$$', '$$'], ['\\(', '\\('], ['\\[', '\\[']];
  const check = (el, where, singleDollar) => {
    const text = prose(el);
    for (const [d, label] of delims) {
      const i = text.indexOf(d);
      if (i >= 0) out.math.push(`raw ${label} left in ${where}: …${short(text.slice(i, i + 60))}`);
    }
    const m = singleDollar && text.match(/(?<![\\$])\$(?!\s)[^$\n]+?(?<!\s)\$/);
    if (m) out.math.push(`raw $…$ left in ${where}: ${short(m[0])}`);
  };
  const md = document.querySelectorAll('.jp-MarkdownOutput, .jp-RenderedMarkdown');
  for (const el of md) {
    if (el.parentElement.closest('.jp-MarkdownOutput, .jp-RenderedMarkdown')) continue;
    check(el, 'notebook markdown', true);
  }
  const content = document.querySelector('.md-content');
  if (content && !isNotebook) check(content, 'page text', false);

  // Copy buttons on every code block (notebook cells are rendered without them).
  if (!isNotebook) {
    for (const code of document.querySelectorAll('.md-content pre > code')) {
      const pre = code.parentElement;
      if (!pre.querySelector('.md-code__button[data-md-type="copy"], .md-clipboard')) {
        out.copy.push(`code block without copy button: ${pre.id ? '#' + pre.id + ' ' : ''}` +
                      short(code.textContent, 60));
      }
    }
  }
  return out;
}"""


def _site_pages(site: Path) -> list[str]:
    """Site-relative URLs of every page: each ``index.html`` outside the asset folders."""
    pages = []
    for index in site.rglob("index.html"):
        rel = index.relative_to(site).parent
        if rel.parts and rel.parts[0] in SKIP_DIRS:
            continue
        pages.append("" if rel == Path(".") else rel.as_posix() + "/")
    return sorted(pages)


@pytest.fixture(scope="module")
def site_url(built_site) -> Iterator[str]:
    """The built site, served over HTTP on a free port of 127.0.0.1."""

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # keep the test output clean
            pass

    handler = functools.partial(QuietHandler, directory=str(built_site.dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="site-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="session")  # session, like built_site, so that a skip comes before the build
def browser():
    """Headless Chromium, driven by Playwright; skips if either is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip(
            "no Playwright: pip install playwright (the 'test' extra) to run the browser test; "
            "do not run 'playwright install', the test uses the system's Chromium"
        )
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    if not (os.path.isfile(executable) and os.access(executable, os.X_OK)):
        pytest.skip(
            "no Chromium browser: install Debian's chromium (apt-get install chromium) "
            "to run the browser test"
        )
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def _new_context(browser, site_url: str, problems: list[str], **kwargs):
    """A fresh browser context that records every problem on the pages it opens.

    Requests to any other origin than the site's are aborted and reported.  The route matches
    only those (a regular expression the driver applies itself), so the site's own requests do
    not make a round trip through Python.
    """
    context = browser.new_context(viewport=VIEWPORT, **kwargs)
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(SETTLE_INIT_JS)
    foreign: set[str] = set()

    def is_local(url: str) -> bool:
        return url.startswith(site_url) or urlsplit(url).scheme in ("data", "blob")

    def on_request(request):
        if not is_local(request.url):
            foreign.add(request.url)
            problems.append(f"request to another host (aborted): {request.url}")

    def on_console(msg):
        # Chromium logs "Failed to load resource" for the aborted requests: reported already.
        if msg.type == "error" and msg.location.get("url") not in foreign:
            problems.append(f"console error: {msg.text}")

    def on_request_failed(request):
        if request.url not in foreign:
            problems.append(f"request failed ({request.failure}): {request.url}")

    def on_response(response):
        if response.status >= 400:
            problems.append(f"HTTP {response.status}: {response.url}")

    origin = re.escape(site_url).replace("/", r"\/")
    context.route(re.compile(rf"^(?!{origin}|data:|blob:)"), lambda route: route.abort())
    context.on("request", on_request)
    context.on("console", on_console)
    context.on("weberror", lambda error: problems.append(f"uncaught exception: {error.error}"))
    context.on("requestfailed", on_request_failed)
    context.on("response", on_response)
    return context


def _settle(page) -> None:
    """Wait until the page, its late requests and the scripts that edit its DOM are done."""
    page.wait_for_load_state("load")
    page.wait_for_load_state("networkidle")
    page.wait_for_function(SETTLE_JS, polling=50)
    page.evaluate("document.fonts.ready.then(() => true)")


def test_every_page_renders_cleanly(browser, site_url, built_site):
    pages = _site_pages(built_site.dir)
    assert "" in pages and CHAPTER in pages, f"page discovery is broken: {pages}"
    failures: dict[str, list[str]] = {}
    # Pages load in batches, each in a fresh context, so that their waits overlap.
    for start in range(0, len(pages), BATCH):
        opened = []
        for rel in pages[start : start + BATCH]:
            problems: list[str] = []
            context = _new_context(browser, site_url, problems)
            page = context.new_page()
            opened.append((rel, problems, context, page))
            try:
                page.goto(site_url + rel, wait_until="commit")
            except Exception as exc:
                problems.append(f"could not open the page: {type(exc).__name__}: {exc}")
        for rel, problems, context, page in opened:
            try:
                _settle(page)
                found = page.evaluate(INSPECT_JS)
                problems += found["image"] + found["math"] + found["copy"]
            except Exception as exc:  # a timeout on one page must not hide the others
                problems.append(f"could not check the page: {type(exc).__name__}: {exc}")
            finally:
                context.close()
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
