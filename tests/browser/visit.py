"""Open every page of the built site in headless Chromium and check that it renders cleanly.

The site is served from ``127.0.0.1``; every request to any other origin is aborted (so the test
never touches the network) and reported as a failure, because the site must read offline.  Per
page the test checks console errors, uncaught exceptions, failed requests and HTTP errors,
images (loaded, with alt text), math (every formula typeset by KaTeX, no raw delimiters left)
and copy buttons on code blocks.  It also saves full-page screenshots of the scaled dot-product
attention chapter in light and dark mode to ``test-artifacts/``.

Every page of both editions is visited once (:func:`page_reports`), and every check runs in
that visit (:data:`PAGE_CHECKS`): besides the above, what a reader meets -- the copy buttons
copy exactly the texts the build ran (``_copies``, by hash), output boxes read as output, no
code or output box is cut off at 1280 px, and no figure shows as its ``repr``.

Needs Playwright for Python (the ``test`` extra) and a Chromium executable, e.g. Debian's
``chromium``; never ``playwright install``.  Without either, the tests are skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from site_tools.copytext import COPY_DIR, page_copies
from tests.site.build import ARTIFACTS
from tests.site.test_codeblocks import _python_blocks

from . import a11y, widget_minilm, widget_small, widget_wordpiece, widgets

VIEWPORT = {"width": 1280, "height": 900}
TIMEOUT_MS = 30_000  # a heavy page (the reference) on a busy two-core machine
BATCH = 8  # pages open at once
CHAPTER = "chapters/scaled-dot-product-attention/"
FOLDED_PAGE = "chapters/soft-lookup/"  # folded "Going further" blocks with code
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

  // Copy buttons on every code block (notebook cells are rendered without them); output boxes
  // (.no-copy) have none, which test_output_boxes_look_like_output checks.
  if (!isNotebook) {
    for (const code of document.querySelectorAll('.md-content pre > code')) {
      const pre = code.parentElement;
      if (pre.closest('.no-copy')) continue;
      if (!pre.querySelector('.md-code__button[data-md-type="copy"], .md-clipboard')) {
        out.copy.push(`code block without copy button: ${pre.id ? '#' + pre.id + ' ' : ''}` +
                      short(code.textContent, 60));
      }
    }
  }
  return out;
}"""


# The edition whose pages this module's browser pass visits; test_browser_zh.py runs the same
# checks over the Chinese edition, so that pytest-xdist's two workers visit both at once.
EDITION = "en"


def _edition_pages(site: Path, module, *, chosen: bool = True) -> list[str]:
    """The pages of ``module``'s edition (its ``EDITION``): ``zh/…`` or all the others;
    with ``chosen``, only those that ``BROWSER_PAGES`` names, where it is set."""
    chinese = getattr(module, "EDITION", "en") == "zh"
    pages = [rel for rel in _site_pages(site) if rel.startswith("zh/") == chinese]
    # BROWSER_PAGES=masks,labs/: only the pages whose URL contains one of these (a quick look
    # at the pages one is working on; CI visits every page)
    only = [part for part in os.environ.get("BROWSER_PAGES", "").split(",") if part]
    if not chosen or not only:
        return pages
    return [rel for rel in pages if any(part in rel for part in only)]


def _site_pages(site: Path) -> list[str]:
    """Site-relative URLs of every page: each ``index.html`` outside the asset folders."""
    pages = []
    for index in site.rglob("index.html"):
        rel = index.relative_to(site).parent
        if SKIP_DIRS & set(rel.parts):  # zh/assets, zh/search too: both editions' pages
            continue
        pages.append("" if rel == Path(".") else rel.as_posix() + "/")
    return sorted(pages)


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
    # Requests a widget's driver makes fail on purpose (tests/browser/widgets.py): not problems.
    deliberate: set[str] = set()
    context.deliberate = deliberate

    def is_local(url: str) -> bool:
        return url.startswith(site_url) or urlsplit(url).scheme in ("data", "blob")

    def on_request(request):
        if not is_local(request.url):
            foreign.add(request.url)
            problems.append(f"request to another host (aborted): {request.url}")

    def on_console(msg):
        # Chromium logs "Failed to load resource" for the aborted requests: reported already.
        where = msg.location.get("url")
        if msg.type == "error" and where not in foreign and where not in deliberate:
            problems.append(f"console error: {msg.text}")

    def on_request_failed(request):
        if request.url not in foreign and request.url not in deliberate:
            problems.append(f"request failed ({request.failure}): {request.url}")

    def on_response(response):
        if response.status >= 400 and response.url not in deliberate:
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
    # document.fonts.ready can stay pending (a font load started as the page settles);
    # evaluate() has no timeout of its own, so the wait is bounded here.
    page.evaluate(
        "Promise.race([document.fonts.ready.then(() => true),"
        " new Promise((done) => setTimeout(() => done(false), 5000))])"
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


# --- what a reader meets on every page: copies, output boxes, widths, figures ---------------------

COPY_BUTTON = 'button.md-code__button[data-md-type="copy"], .md-clipboard'
# A page's Python blocks as site_tools.copytext.page_copies reads them (not mkdocstrings' boxes);
# LAYOUT_JS and COPY_TARGETS_JS take it as their argument.
PAGE_BLOCKS = {
    "blocks": ".md-content div.language-python.highlight",
    "notThese": ".doc-object, .doc-signature",
    "button": COPY_BUTTON,
}

# Records every text a copy button puts on the clipboard, by the two ways the site's buttons write
# it: Material's (clipboard.js: a selected textarea and execCommand('copy'), so a 'copy' event) and
# mkdocs-jupyter's <clipboard-copy> (navigator.clipboard.writeText).  The buttons' own code runs;
# test_recorded_copy_is_what_the_clipboard_gets checks the record against the real clipboard.
COPY_INIT_JS = """
window.__copies = [];
document.addEventListener('copy', (event) => {
  const el = event.target;
  const text = el && (el.tagName === 'TEXTAREA' || el.tagName === 'INPUT')
    ? el.value.slice(el.selectionStart, el.selectionEnd)
    : String(document.getSelection());
  window.__copies.push(text);
}, true);
if (navigator.clipboard) {
  const write = navigator.clipboard.writeText.bind(navigator.clipboard);
  navigator.clipboard.writeText = (text) => {
    window.__copies.push(String(text));
    return write(text);
  };
}
"""

# Returns {overflow, outputs, figure} for the loaded page; opens every <details> and shows every
# content tab first, so that hidden boxes are measured too.
LAYOUT_JS = r"""(sel) => {
  const short = (s, n = 60) => {
    s = (s || '').replace(/\s+/g, ' ').trim();
    return s.length > n ? s.slice(0, n) + '…' : s;
  };
  for (const d of document.querySelectorAll('.md-content details')) {
    if (!d.open) d.dataset.closedOnLoad = '';  // for the copy check of folded blocks
    d.open = true;
  }
  const style = document.createElement('style');
  style.textContent = '.md-typeset .tabbed-content > .tabbed-block { display: block !important; }';
  document.head.append(style);

  // Nothing cut off: every code, output and notebook box fits its content at this width.
  const overflow = [];
  const boxes = document.querySelectorAll(
    '.md-content pre > code, .md-content .jp-InputArea pre, .md-content .jp-OutputArea pre');
  boxes.forEach((box, i) => {
    // Jupyter's CSS wraps notebook text (pre-wrap), which breaks a line mid-word instead of
    // overflowing: measure notebook boxes unwrapped.
    const notebook = !!box.closest('.jp-InputArea, .jp-OutputArea');
    const wrap = box.style.whiteSpace;
    if (notebook) box.style.whiteSpace = 'pre';
    const over = box.scrollWidth - box.clientWidth;
    if (notebook) box.style.whiteSpace = wrap;
    if (over > 1) {
      const kind = box.closest('.exec-output') ? 'output box'
        : box.closest('.jp-InputArea') ? 'notebook cell'
        : box.closest('.jp-OutputArea') ? 'notebook output'
        : box.closest('.doc-object, .doc-signature') ? 'API box' : 'code box';
      const longest = Math.max(...box.textContent.split('\n').map((l) => l.length));
      overflow.push(`box ${i + 1} (${kind}, longest line ${longest} chars) ` +
                    `${notebook ? 'wraps' : 'overflows'} by ${over} px: ${short(box.textContent)}`);
    }
  });

  // Output looks like output: unfilled, labelled, no copy button, right after its code.
  const outputs = [];
  const look = (box) => {
    const c = getComputedStyle(box.querySelector('pre > code'));
    return [c.backgroundColor, c.borderLeftWidth, c.borderLeftStyle, c.borderLeftColor].join(' ');
  };
  for (const out of document.querySelectorAll('.md-content div.exec-output')) {
    const where = `output box "${short(out.textContent, 50)}"`;
    const code = out.previousElementSibling;
    if (out.querySelector(sel.button)) {
      outputs.push(`${where} has a copy button`);
    }
    if (!out.classList.contains('no-copy')) outputs.push(`${where} is not marked no-copy`);
    const label = getComputedStyle(out, '::before').content;
    if (!label || label === 'none' || label === 'normal') outputs.push(`${where} has no label`);
    if (!code || !code.matches('div.language-python.highlight')) {
      outputs.push(`${where} does not follow a Python code box`);
    } else if (look(code) === look(out)) {
      outputs.push(`${where} looks like its code box (${look(out)})`);
    }
  }
  const blocks = [...document.querySelectorAll(sel.blocks)]
    .filter((block) => !block.closest(sel.notThese) && block.querySelector('code'));
  for (const block of blocks) {
    const next = block.nextElementSibling;
    const where = `code box "${short(block.querySelector('code').textContent, 50)}"`;
    const isOutput = next && next.matches('div.highlight')
      && /(^|\s)language-(text|pycon|console)(\s|$)/.test(next.className);
    if (isOutput && !next.classList.contains('exec-output')) {
      outputs.push(`${where} is followed by an unmarked output box: ` +
                   `"${short(next.textContent, 50)}"`);
    }
    const raises = block.dataset.raises;
    if (raises && !(isOutput && next.classList.contains('exec-error'))) {
      outputs.push(`${where} raises ${raises} but is not followed by an error box`);
    } else if (raises && !next.textContent.split('\n')[0].includes(raises)) {
      outputs.push(`${where} raises ${raises}; its box says "${short(next.textContent, 50)}"`);
    }
  }

  // No figure shown as its repr ("<Figure size 640x480 with 1 Axes>").
  const text = document.body.innerText;
  const figure = [...text.matchAll(/<Figure size[^>\n]*>?/g)].map((m) => m[0]);
  return {overflow, outputs, figure};
}"""

# Returns what a reader meets first, before anything is opened: where the first figure starts, the
# page's title as the nav and the <h1> give it, pictures outside a captioned <figure>, captions and
# their numbers, references left unnumbered and chapter or figure numbers typed into the prose.
FIGURES_JS = r"""() => {
  const article = document.querySelector('.md-content article')
    || document.querySelector('.md-content');
  const short = (s, n = 60) => {
    s = (s || '').replace(/\s+/g, ' ').trim();
    return s.length > n ? s.slice(0, n) + '…' : s;
  };
  const top0 = article.getBoundingClientRect().top + window.scrollY;
  const ignore = '.katex, .twemoji, .md-icon, .headerlink, button, clipboard-copy, .md-clipboard, '
    + '.md-code__nav, .md-source, .jp-Cell, .jp-OutputArea, .jp-InputArea, figure svg svg, '
    + 'figure .explorer svg';
  const pictures = [...article.querySelectorAll('img, svg')].filter((el) => !el.closest(ignore));
  const loose = pictures.filter((el) => {
    const fig = el.closest('figure');
    return !fig || !fig.querySelector(':scope > figcaption');
  }).map((el) => el.tagName.toLowerCase() + ' ' + short(
    el.getAttribute('alt') || el.getAttribute('aria-label') || el.outerHTML, 50));
  const figures = [...article.querySelectorAll('figure')];
  const visible = figures.filter(
    (f) => f.offsetParent !== null && !f.closest('details:not([open])'));
  const tops = visible.map((f) => f.getBoundingClientRect().top + window.scrollY - top0);
  const captions = figures.map((f) => {
    const cap = f.querySelector(':scope > figcaption');
    return {id: f.id || null, number: f.dataset.number || null,
            caption: cap ? short(cap.textContent, 80) : null};
  });
  const h1 = article.querySelector('h1');
  const h1text = h1 ? [...h1.childNodes]
    .filter((n) => !(n.classList && n.classList.contains('headerlink')))
    .map((n) => n.textContent).join('').trim() : null;
  const active = document.querySelector('.md-nav--primary .md-nav__link--active');
  const lone = /(^|[^\w#&])#(?![\w#])/;
  const unresolved = [...article.querySelectorAll('a')]
    .filter((a) => !a.classList.contains('headerlink') && !a.closest('.md-code__nav, .jp-Cell')
                   && (a.hasAttribute('data-pending-ref') || lone.test(a.textContent)))
    .map((a) => `"${short(a.textContent, 40)}" → ${a.getAttribute('href')}`);
  const stale = [];
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.parentElement.closest(
      'a, code, pre, .figure-number, .jp-Cell, .exec-output, script, style')) continue;
    const typed =
      /\b(chapters?|figures?|exercise \d+ of chapter)\s+\d+|第\s*\d+\s*章|图\s*\d+\.\d+/gi;
    for (const m of node.data.matchAll(typed)) {
      stale.push(short(node.data.slice(Math.max(0, m.index - 30), m.index + 40), 70));
    }
  }
  return {
    firstFigureTop: tops.length ? Math.min(...tops) : null,
    loose, captions, h1: h1text,
    navTitle: active ? active.textContent.trim() : null,
    unresolved, stale,
  };
}"""

# Brings every lazy picture of the page in (each scrolled into view, as a reader would) and
# waits until each has loaded or failed; back to the top after.
LOAD_PICTURES_JS = r"""async () => {
  for (const img of document.images) {
    if (img.complete) continue;
    img.scrollIntoView({block: 'center'});
    await new Promise((done) => {
      img.addEventListener('load', done, {once: true});
      img.addEventListener('error', done, {once: true});
      setTimeout(done, 5000);
    });
  }
  window.scrollTo(0, 0);
}"""

# After every <details> is open: each figure's picture, drawn width against shown width (the
# lazy ones scrolled into view first: a picture not loaded has no natural width to compare).
FIGURE_SIZES_JS = r"""async () => {
  await (LOAD_PICTURES)();
  const out = [];
  for (const fig of document.querySelectorAll('.md-content figure')) {
    const pic = fig.querySelector(':scope img, :scope > svg, :scope > a > img');
    if (!pic || pic.closest('.katex')) continue;
    const rect = pic.getBoundingClientRect();
    if (!rect.width) continue;
    let drawn = 0;
    if (pic.tagName === 'IMG') {
      const cs = getComputedStyle(pic);
      const pad = parseFloat(cs.paddingLeft) + parseFloat(cs.paddingRight)
        + parseFloat(cs.borderLeftWidth) + parseFloat(cs.borderRightWidth);
      drawn = pic.naturalWidth;
      out.push({id: fig.id || fig.dataset.number, drawn, shown: rect.width - pad,
                unloaded: !(pic.complete && drawn > 0)});
    } else {
      const vb = pic.viewBox && pic.viewBox.baseVal;
      drawn = vb ? vb.width : 0;
      out.push({id: fig.id || fig.dataset.number, drawn, shown: rect.width});
    }
  }
  return out;
}""".replace("LOAD_PICTURES", LOAD_PICTURES_JS)

# Lists the page's copy buttons (Python blocks in page order, then notebook cells), each with the
# text its block shows (what is rendered: elements hidden by CSS left out), and numbers the buttons
# for COPY_ALL_JS.
COPY_TARGETS_JS = r"""(sel) => {
  const visible = (el) => {
    let text = '';
    const walk = (node) => {
      if (node.nodeType === Node.TEXT_NODE) text += node.data;
      else if (node.nodeType === Node.ELEMENT_NODE && getComputedStyle(node).display !== 'none') {
        node.childNodes.forEach(walk);
      }
    };
    walk(el);
    return text.replace(/\s+$/, '');
  };
  const out = [];
  const blocks = [...document.querySelectorAll(sel.blocks)]
    .filter((block) => !block.closest(sel.notThese) && block.querySelector('code'));
  for (const block of blocks) {
    const button = block.querySelector(sel.button);
    if (button) button.dataset.copyTest = String(out.length);
    out.push({kind: 'python', button: !!button, shown: visible(block.querySelector('code')),
              folded: !!block.closest('details[data-closed-on-load]')});
  }
  for (const button of document.querySelectorAll('.md-content clipboard-copy')) {
    const cell = button.closest('.jp-InputArea, .jp-Cell');
    const pre = cell && cell.querySelector('.highlight-ipynb pre, pre');
    button.dataset.copyTest = String(out.length);
    out.push({kind: 'notebook', button: true, shown: pre ? visible(pre) : ''});
  }
  return out;
}"""
# Clicks every copy button that COPY_TARGETS_JS numbered, in order, and returns what each copied
# (null: nothing). One evaluate for the page: each click's 'copy' event is recorded as it happens
# (measured on the pitfalls page, 61 buttons: the same 61 texts as one evaluate per click, in a
# third of the time); test_recorded_copy_is_what_the_clipboard_gets checks a real click.
COPY_ALL_JS = """(count) => {
  const out = [];
  for (let i = 0; i < count; i++) {
    const button = document.querySelector(`[data-copy-test="${i}"]`);
    window.__copies = [];
    if (button) button.click();
    out.push(window.__copies.length ? window.__copies[window.__copies.length - 1] : null);
  }
  return out;
}"""


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


# Closes again the <details> that were closed when the page loaded (LAYOUT_JS opened them), and
# says for each numbered copy button whether a reader can see it (and so press it) now.
CLOSE_FOLDS_JS = """(count) => {
  for (const d of document.querySelectorAll('.md-content details[data-closed-on-load]')) {
    d.open = false;
  }
  const out = [];
  for (let i = 0; i < count; i++) {
    const button = document.querySelector(`[data-copy-test="${i}"]`);
    out.push(!!button && button.checkVisibility({visibilityProperty: true}));
  }
  return out;
}"""


def _copy_report(page) -> list[dict]:
    """What each copy button of the page copies (:data:`COPY_TARGETS_JS`, :data:`COPY_ALL_JS`),
    with every folded block open (as LAYOUT_JS left them, as a reader opens one to copy it);
    for a block folded on load (``??? note "Going further"``, a solution), whether its button
    can be seen with the block closed (``visible_closed``) and what it copies then
    (``copied_closed``)."""
    copies = page.evaluate(COPY_TARGETS_JS, PAGE_BLOCKS)
    copied = page.evaluate(COPY_ALL_JS, len(copies))
    for block, text in zip(copies, copied, strict=True):
        block["copied"] = text if block["button"] else None
    if any(block.get("folded") for block in copies):
        visible = page.evaluate(CLOSE_FOLDS_JS, len(copies))
        closed = page.evaluate(COPY_ALL_JS, len(copies))
        for block, seen, text in zip(copies, visible, closed, strict=True):
            if block.get("folded"):
                block["visible_closed"] = seen
                block["copied_closed"] = text if block["button"] else None
    return copies


# The checks of the one browser visit each page gets: name -> check(page), whose result lands
# in the page's report under its name. A new check of what a reader meets on every page (an
# accessibility audit, a widget) joins here, not in a visit of its own.
def _axe_report(page) -> dict[str, list[dict]]:
    """axe-core's WCAG 2.0/2.1 A and AA violations in light and dark, at 1280 and 390 px
    (tests/browser/a11y.py), keyed ``"light 1280"`` and so on."""
    found = a11y.audit_variants(page)
    a11y.set_variant(page, "light", VIEWPORT["width"])  # back to the visit's own
    return {f"{scheme} {width}": violations for (scheme, width), violations in found.items()}


PAGE_CHECKS = {
    "inspect": lambda page: page.evaluate(INSPECT_JS),
    "figures": lambda page: page.evaluate(FIGURES_JS),
    "layout": lambda page: page.evaluate(LAYOUT_JS, PAGE_BLOCKS),
    "sizes": lambda page: page.evaluate(FIGURE_SIZES_JS),
    # The page's widgets (tests/browser/widgets.py), used as a reader would: a page with one is
    # then audited with the reader's result on it.
    "widgets": lambda page: widgets.run(page, page.context.deliberate),
    # The page before any copy button is clicked (and after its widgets' use): in light and
    # dark, at 1280 and 390 px (it puts the visit's scheme and width back).
    "axe": _axe_report,
    "copies": _copy_report,  # last: it clicks every copy button
}


def _first_visit_weight(responses: list) -> dict:
    """What the page's first visit weighs: every response's body at gzip level 6
    (:func:`tests.browser.a11y.gzip_size`), summed; the page's own HTML apart."""
    rows = []
    for response in list(responses):
        try:
            body = response.body()
        except Exception:  # a redirect or an aborted request has no body
            body = b""
        rows.append({"url": response.url, "gzip": a11y.gzip_size(body) if body else 0})
    return {"total": sum(r["gzip"] for r in rows), "responses": rows}


@pytest.fixture(scope="module")
def page_reports(browser, site_url, built_site, request) -> dict[str, dict]:
    """Every page of the module's edition opened once at 1280x900, every check of
    :data:`PAGE_CHECKS` run in that visit, with the problems of loading it."""
    pages = _edition_pages(built_site.dir, request.module)
    reports: dict[str, dict] = {}
    for start in range(0, len(pages), BATCH):
        opened = []
        for rel in pages[start : start + BATCH]:
            problems: list[str] = []
            # Reduced motion (a reader's setting that Material honours: no transitions), so
            # that a change of colour scheme or width is done when it is made, not 250 ms later.
            context = _new_context(
                browser,
                site_url,
                problems,
                permissions=["clipboard-read", "clipboard-write"],
                reduced_motion="reduce",
            )
            context.add_init_script(COPY_INIT_JS)
            responses: list = []  # a fresh context: the first visit's, with a cold cache
            context.on("response", lambda response, seen=responses: seen.append(response))
            page = context.new_page()
            opened.append((rel, problems, context, page, responses))
            try:
                page.goto(site_url + rel, wait_until="commit")
            except Exception as exc:
                problems.append(f"could not open the page: {type(exc).__name__}: {exc}")
        for rel, problems, context, page, responses in opened:
            report = {"overflow": [], "outputs": [], "figure": [], "copies": None}
            seconds = report["seconds"] = {}  # per check, for test-artifacts/ (not asserted)
            try:
                clock = time.perf_counter()
                _settle(page)
                report["weight"] = _first_visit_weight(responses)
                seconds["settle"] = time.perf_counter() - clock
                for name, check in PAGE_CHECKS.items():
                    clock = time.perf_counter()
                    result = check(page)
                    seconds[name] = time.perf_counter() - clock
                    if name == "layout":
                        report.update(result)
                    else:
                        report[name] = result
            except Exception as exc:  # a timeout on one page must not hide the others
                problems.append(f"could not check the page: {type(exc).__name__}: {exc}")
            finally:
                context.close()
            report["problems"] = problems
            reports[rel] = report
    edition = getattr(request.module, "EDITION", "en")
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"browser-pass-{edition}.json").write_text(
        json.dumps({rel: r["seconds"] for rel, r in reports.items()}, indent=1), "utf-8"
    )
    return reports


def _fail_per_page(found: dict[str, list[str]], what: str, checked: int) -> None:
    found = {page: items for page, items in found.items() if items}
    if found:
        total = sum(len(items) for items in found.values())
        report = "\n".join(
            f"/{page} ({len(items)})\n" + "\n".join(f"  - {item}" for item in items)
            for page, items in found.items()
        )
        pytest.fail(f"{what}: {total} on {len(found)} of {checked} pages:\n{report}", pytrace=False)


def _unchecked(report: dict) -> list[str]:
    return [f"not checked: {p}" for p in report["problems"] if p.startswith("could not")]


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
    (``site_tools/program.py``, written to ``_copies``), compared by hash, block by block in
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


# --- pictures, captions and one numbering (the reading experience) -------------------------------

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


# --- the widgets: the reader's own input, computed in the page, equal to PyTorch ---------------


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
