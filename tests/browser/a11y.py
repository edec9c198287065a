"""Accessibility audit and first-visit weight of the built site, in headless Chromium.

Helpers that the browser tests call inside their one visit per page, and a command that
audits a built site on its own::

    python -m tests.browser.a11y SITE_DIR [--pages N] [--schemes light,dark] [--widths 1280,390]

- :data:`AXE_JS`: axe-core 4.14.1, vendored from the npm registry (tests/browser/vendor/axe-core).
- :func:`run_axe`: the WCAG 2.0/2.1 A and AA violations on an open page, no rule disabled,
  nothing excluded; in code blocks, the colour-contrast rule checks one token of each look
  (:data:`CODE_SAMPLES_JS`), every other rule every element.
- :func:`audit_variants`: :func:`run_axe` in each colour scheme and viewport width, on the
  page already open (Material follows ``prefers-color-scheme``; the emulated media and the
  viewport change in place, so the page is loaded once).
- :func:`first_visit_weight`: what a first visit costs: the page opened in a fresh browser
  context (cold cache), every response's body gzip-compressed at level 6, summed.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import re
import shutil
import statistics
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from tests.browser.conftest import CHROMIUM_ARGS  # no network but 127.0.0.1

ROOT = Path(__file__).resolve().parents[2]
AXE_JS = ROOT / "tests" / "browser" / "vendor" / "axe-core" / "axe.min.js"
WCAG_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")
SCHEMES = ("light", "dark")
WIDTHS = (1280, 390)
HEIGHT = 900
SKIP_DIRS = {"assets", "search"}  # folders of the site that hold no pages
# Issue 36's budgets for a first visit (gzip level 6, both editions): the median page and
# every page. The search index is not part of a first visit (overrides/main.html).
BUDGET_MEDIAN = 300 * 1024
BUDGET_PAGE = 1024 * 1024
BUDGET_HTML = 1024 * 1024  # any page's HTML, uncompressed

# Code blocks hold most of a page's elements (a chapter: about 70%; the reference: 66,000
# highlighted tokens), and axe's colour-contrast rule, the costliest by far (525 of 834 ms of
# a run on the masks page, measured), checks each one where it stands. A token's contrast
# is a function of how it looks (its computed colour, font, shadow, opacity, background) and
# of how every element behind it looks, up to the page's root. So in each variant, before the
# run, this marks in every `pre > code` the first element with text of each such look, page-
# wide; the colour-contrast rule checks the marked ones and skips their twins
# (:data:`CONTRAST_SELECTOR`). A token that looks like no other is always checked; every other
# rule, and every element outside code blocks, is checked as before (tests/browser/
# test_a11y_units.py: a token whose colour or background fails in one block among many is
# found; so is one that differs from its twins only by an ancestor's background).
SAMPLE_ATTR = "data-a11y-sample"
CODE_SAMPLES_JS = """(attr) => {
  for (const el of document.querySelectorAll(`[${attr}]`)) el.removeAttribute(attr);
  const look = (el) => {
    const s = getComputedStyle(el);
    return [s.color, s.fontFamily, s.fontSize, s.fontWeight, s.fontStyle, s.textShadow,
      s.opacity, s.backgroundColor, s.backgroundImage, s.filter, s.mixBlendMode,
      s.visibility].join(';');
  };
  const seen = new Set();
  for (const code of document.querySelectorAll('pre > code')) {
    const around = [];  // the block and everything behind it, up to the root
    for (let a = code; a; a = a.parentElement) around.push(look(a));
    const keys = new Map([[code, around.join('|')]]);
    const key = (el) => {
      let k = keys.get(el);
      if (k === undefined) {
        k = key(el.parentElement) + '|' + el.localName + ':' + look(el);
        keys.set(el, k);
      }
      return k;
    };
    for (const el of code.querySelectorAll('*')) {
      if (![...el.childNodes].some((n) => n.nodeType === 3 && n.data.trim())) continue;
      const k = key(el);
      if (!seen.has(k)) {
        seen.add(k);
        el.setAttribute(attr, '');
      }
    }
  }
}"""
# colour-contrast's elements (axe's default is every element): all but the unmarked twins
CONTRAST_SELECTOR = f"*:not(pre > code *:not([{SAMPLE_ATTR}]))"
CONFIGURE_JS = "(selector) => axe.configure({rules: [{id: 'color-contrast', selector}]})"

# axe's result, made small inside the page: one entry per rule, each node's CSS target and
# the first line of its failure summary.
_RUN_JS = """async (tags) => {
  const result = await axe.run(document, {
    runOnly: {type: 'tag', values: tags},
    resultTypes: ['violations'],
  });
  return result.violations.map((v) => ({
    id: v.id,
    impact: v.impact,
    help: v.help,
    targets: v.nodes.map((n) => n.target.map((t) => [].concat(t).join(' >>> ')).join(' ')),
    message: (v.nodes[0] && v.nodes[0].failureSummary || v.help).split('\\n').slice(0, 3).join(' '),
  }));
}"""


_SETTLED_JS = """async () => {
  const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
  await frame();
  const end = Date.now() + 3000;
  const busy = (a) => a.playState === 'running' && a.effect
    && a.effect.getComputedTiming().iterations !== Infinity;
  while (Date.now() < end && document.getAnimations().some(busy)) {
    await new Promise((r) => setTimeout(r, 50));
  }
  await frame();
  await frame();
}"""


def run_axe(page, tags: Iterable[str] = WCAG_TAGS) -> list[dict]:
    """axe-core's violations on ``page`` (a Playwright page, loaded and settled).

    Each violation is ``{"id", "impact", "help", "targets", "message"}``: the rule, its
    impact ("minor" … "critical"), the rule's one-line help, the CSS selector of every
    failing element, and the failure summary of the first. Injects axe once per document.
    An empty list means no violation of the rules with these tags. In code blocks the
    colour-contrast rule checks one element of each look (:data:`CODE_SAMPLES_JS`, marked
    afresh before each run, since a variant changes the looks).
    """
    tags = list(tags)
    if not tags or not all(isinstance(t, str) and t for t in tags):
        raise ValueError(f"tags must be non-empty axe tag names, got {tags!r}")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE_JS))
        page.evaluate(CONFIGURE_JS, CONTRAST_SELECTOR)
    page.evaluate(CODE_SAMPLES_JS, SAMPLE_ATTR)
    return page.evaluate(_RUN_JS, tags)


def set_variant(page, scheme: str, width: int) -> None:
    """Switch the open page to a colour scheme ("light" or "dark") and a viewport width."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    if not isinstance(width, int) or width < 200:
        raise ValueError(f"width must be an int of at least 200 px, got {width!r}")
    page.emulate_media(color_scheme=scheme)
    page.set_viewport_size({"width": width, "height": HEIGHT})
    want = "slate" if scheme == "dark" else "default"
    # Material picks the palette by the media query when the page loads, not when the query
    # changes later: choose it as the reader would, with the palette's own radio input.
    page.evaluate(
        """(want) => {
          const input = document.querySelector(
            `input[name="__palette"][data-md-color-scheme="${want}"]`);
          if (input && !input.checked) input.click();
        }""",
        want,
    )
    page.wait_for_function(
        """(want) => !document.body.hasAttribute('data-md-color-scheme')
             || document.body.getAttribute('data-md-color-scheme') === want""",
        arg=want,
        timeout=5000,
    )
    # the transitions the change started (Material fades its drawer and colours) have
    # ended, and two frames are painted, before axe reads the colours
    page.evaluate(_SETTLED_JS)


def audit_variants(
    page, schemes: Iterable[str] = SCHEMES, widths: Iterable[int] = WIDTHS
) -> dict[tuple[str, int], list[dict]]:
    """:func:`run_axe` on the open page in every (scheme, width), keyed by that pair.

    The widths go back and forth (light 1280, light 390, dark 390, dark 1280): the page is
    laid out again once per change of width, and this order changes it least.
    """
    results = {}
    widths = list(widths)
    for n, scheme in enumerate(schemes):
        for width in widths if n % 2 == 0 else widths[::-1]:
            set_variant(page, scheme, width)
            results[(scheme, width)] = run_axe(page)
    return results


def gzip_size(body: bytes) -> int:
    """Bytes of ``body`` gzip-compressed at level 6 (what a static host serves)."""
    return len(gzip.compress(body, compresslevel=6, mtime=0))


def first_visit_weight(browser, url: str, **context_options) -> dict:
    """The first visit's weight of the page at ``url``: a fresh context, so a cold cache.

    Returns ``{"total": int, "responses": [{"url", "status", "bytes", "gzip"}, ...]}``, where
    ``gzip`` is the response body's size at gzip level 6 and ``total`` their sum, after the
    page has loaded and its network has gone idle (the search index, fetched by a script,
    counts when it is fetched before the reader does anything). Requests to other hosts are
    aborted and do not count.
    """
    site = "{0.scheme}://{0.netloc}/".format(urlsplit(url))
    context = browser.new_context(**context_options)
    responses = []
    context.on("response", lambda response: responses.append(response))
    origin = re.escape(site)
    context.route(re.compile(rf"^(?!{origin}|data:|blob:)"), lambda route: route.abort())
    try:
        page = context.new_page()
        page.goto(url, wait_until="load")
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(300)  # a worker's late fetch
        page.wait_for_load_state("networkidle")
        rows = []
        for response in responses:
            try:
                body = response.body()
            except Exception:  # a redirect or an aborted request has no body
                body = b""
            rows.append(
                {
                    "url": response.url,
                    "status": response.status,
                    "bytes": len(body),
                    "gzip": gzip_size(body) if body else 0,
                }
            )
    finally:
        context.close()
    return {"total": sum(r["gzip"] for r in rows), "responses": rows}


def site_pages(site: Path) -> list[str]:
    """Site-relative URLs of every page of a built site (both editions)."""
    pages = []
    for index in Path(site).rglob("index.html"):
        rel = index.relative_to(site).parent
        if SKIP_DIRS & set(rel.parts):
            continue
        pages.append("" if rel == Path(".") else rel.as_posix() + "/")
    return sorted(pages)


@contextmanager
def serve(site: Path) -> Iterator[str]:
    """``site`` served over HTTP on a free port of 127.0.0.1; yields its URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def chromium() -> Iterator:
    """Debian's headless Chromium, driven by Playwright's sync API."""
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def settle(page) -> None:
    """Wait for the load, the late requests and the fonts (bounded)."""
    page.wait_for_load_state("load")
    page.wait_for_load_state("networkidle")
    page.evaluate(
        "Promise.race([document.fonts.ready.then(() => true),"
        " new Promise((done) => setTimeout(() => done(false), 5000))])"
    )


def _sample(pages: list[str], n: int | None) -> list[str]:
    if not n or n >= len(pages):
        return pages
    step = len(pages) / n
    return [pages[int(i * step)] for i in range(n)]


def audit_site(
    site: Path, *, pages: int | None, schemes, widths, weigh: bool = True, only: str | None = None
) -> dict:
    """Audit (a sample of) the pages of ``site``: violations per page and variant, weights."""
    rels = _sample([r for r in site_pages(site) if only is None or only in "/" + r], pages)
    violations: dict[str, dict[tuple[str, int], list[dict]]] = {}
    weights: dict[str, int] = {}
    with serve(site) as url, chromium() as browser:
        for rel in rels:
            start = time.perf_counter()
            context = browser.new_context(
                viewport={"width": widths[0], "height": HEIGHT}, color_scheme=schemes[0]
            )
            context.route(
                re.compile(rf"^(?!{re.escape(url)}|data:|blob:)"), lambda route: route.abort()
            )
            try:
                page = context.new_page()
                page.goto(url + rel, wait_until="load", timeout=60_000)
                settle(page)
                violations[rel] = audit_variants(page, schemes, widths)
            finally:
                context.close()
            if weigh:
                weights[rel] = first_visit_weight(browser, url + rel)["total"]
            found = sum(len(v["targets"]) for vs in violations[rel].values() for v in vs)
            print(
                f"  /{rel}: {found} failing elements, "
                f"{weights.get(rel, 0) / 1024:.0f} KB, {time.perf_counter() - start:.1f} s",
                file=sys.stderr,
                flush=True,
            )
    return {"violations": violations, "weights": weights}


def report(result: dict, details: bool = False) -> str:
    """The audit as text: per rule the failing elements and pages, then the weights;
    with ``details``, every failing element of every page and variant."""
    nodes: dict[str, int] = defaultdict(int)
    pages: dict[str, set[str]] = defaultdict(set)
    variants: dict[str, set[str]] = defaultdict(set)
    impact: dict[str, str] = {}
    example: dict[str, str] = {}
    for rel, by_variant in result["violations"].items():
        for (scheme, width), found in by_variant.items():
            for v in found:
                nodes[v["id"]] += len(v["targets"])
                pages[v["id"]].add(rel)
                variants[v["id"]].add(f"{scheme}/{width}")
                impact[v["id"]] = v["impact"]
                example.setdefault(v["id"], f"/{rel} {v['targets'][:1]}: {v['message']}")
    audited = len(result["violations"])
    lines = [f"axe-core 4.14.1, {', '.join(WCAG_TAGS)}: {audited} pages"]
    if not nodes:
        lines.append("  no violations")
    for rule in sorted(nodes, key=lambda r: -nodes[r]):
        lines.append(
            f"  {rule} ({impact[rule]}): {nodes[rule]} elements on {len(pages[rule])} pages "
            f"[{', '.join(sorted(variants[rule]))}]\n      e.g. {example[rule][:300]}"
        )
    if details:
        for rel, by_variant in result["violations"].items():
            for (scheme, width), found in by_variant.items():
                for v in found:
                    for target in v["targets"]:
                        lines.append(f"    /{rel} {scheme}/{width} {v['id']}: {target}")
                    lines.append(f"      {v['message'][:400]}")
    weights = result["weights"]
    if weights:
        kb = sorted(w / 1024 for w in weights.values())
        heaviest = sorted(weights, key=weights.get, reverse=True)[:5]
        lines.append(
            f"first-visit weight (gzip 6): median {statistics.median(kb):.0f} KB, "
            f"max {kb[-1]:.0f} KB; heaviest: "
            + ", ".join(f"/{r} {weights[r] / 1024:.0f} KB" for r in heaviest)
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.browser.a11y", description=__doc__)
    parser.add_argument("site", type=Path, help="a built site (the English edition, zh/ inside)")
    parser.add_argument("--pages", type=int, default=None, help="audit N pages spread evenly")
    parser.add_argument("--schemes", default="light,dark")
    parser.add_argument("--widths", default="1280,390")
    parser.add_argument("--no-weight", action="store_true", help="skip the first-visit weights")
    parser.add_argument("--details", action="store_true", help="list every failing element")
    parser.add_argument("--only", default=None, help="audit only pages whose URL contains this")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        parser.error(f"{args.site} holds no index.html: build the site first")
    schemes = [s for s in args.schemes.split(",") if s]
    bad = [s for s in schemes if s not in SCHEMES]
    if bad or not schemes:
        parser.error(f"--schemes takes {','.join(SCHEMES)}, got {args.schemes!r}")
    try:
        widths = [int(w) for w in args.widths.split(",") if w]
    except ValueError:
        parser.error(f"--widths takes comma-separated integers, got {args.widths!r}")
    result = audit_site(
        args.site,
        pages=args.pages,
        schemes=schemes,
        widths=widths,
        weigh=not args.no_weight,
        only=args.only,
    )
    print(report(result, details=args.details))
    return 1 if any(v for vs in result["violations"].values() for v in vs.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
