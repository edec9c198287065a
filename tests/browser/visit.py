"""The one browser visit of every page: each page of an edition opened once in headless
Chromium, every check of :data:`PAGE_CHECKS` run in that visit, its results the page's report.

The site is served from ``127.0.0.1``; every request to any other origin is aborted (so the test
never touches the network) and reported as a failure, because the site must read offline.  Per
page the visit records console errors, uncaught exceptions, failed requests and HTTP errors,
images (loaded, with alt text), math (every formula typeset by KaTeX, no raw delimiters left)
and copy buttons on code blocks (:data:`INSPECT_JS`); what a reader meets -- what each copy
button copies, output boxes, widths, figures and their numbers (:data:`LAYOUT_JS`,
:data:`FIGURES_JS`, :data:`FIGURE_SIZES_JS`); the page's widgets used as a reader would
(tests/browser/widgets.py); the accessibility audit (tests/browser/a11y.py); and the weight
of a first visit.

:func:`visit` makes the visit; the fixture ``page_reports`` (tests/browser/conftest.py) makes
it once per session and edition and hands it to the modules that check its reports, one per
concern: test_render.py, test_copy_buttons.py, test_figures.py, test_accessibility.py and
test_widgets.py (the English edition), test_zh.py (the same checks, the Chinese edition).

Needs Playwright for Python (the ``test`` extra) and a Chromium executable, e.g. Debian's
``chromium``; never ``playwright install``.  Without either, the tests are skipped.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.site.build import ARTIFACTS

from . import a11y, widgets

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


def _edition_pages(site: Path, module, *, chosen: bool = True) -> list[str]:
    """The pages of ``module``'s edition (its ``EDITION``, English where it sets none):
    ``zh/…`` or all the others;
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


# --- what a reader meets on every page: copies, output boxes, widths, figures ---------------------

COPY_BUTTON = 'button.md-code__button[data-md-type="copy"], .md-clipboard'
# A page's Python blocks as site_tools.engine.copytext.page_copies reads them (not
# mkdocstrings' boxes); LAYOUT_JS and COPY_TARGETS_JS take it as their argument.
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


def visit(browser, site_url: str, built_site, module) -> dict[str, dict]:
    """Every page of ``module``'s edition opened once at 1280x900, every check of
    :data:`PAGE_CHECKS` run in that visit, with the problems of loading it."""
    pages = _edition_pages(built_site.dir, module)
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
    edition = getattr(module, "EDITION", "en")
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
