"""One numbering for the whole site: chapter numbers come from the nav, figure
numbers from the order of figures on a page, and prose never types either.

- A nav title ``"6. Masks"`` gives the page ``chapters/masks.md`` the number 6.
- Every ``<figure>`` on a page with a number gets ``data-number="6.1"`` (then
  6.2, …) and its caption a prefix "Figure 6.1 — ". A figure without a
  caption is an error: a reader cannot refer to it.
- A link whose text holds a lone ``#`` gets the number of what it points to:
  ``[chapter #](masks.md)`` reads "chapter 6", ``[figure #](#fig-mask-grid)``
  "figure 6.1", ``[Figure #](masks.md#fig-mask-grid)`` the same from another
  page. A reference that points at nothing numbered is an error.

Figures on other pages are resolved after the build (``resolve_site``),
because a page's figures are only known once its code has run.
"""

from __future__ import annotations

import html as html_lib
import logging
import posixpath
import re
from pathlib import Path
from urllib.parse import urlsplit

log = logging.getLogger("mkdocs.plugins.numbering")

NAV_NUMBER = re.compile(r"^\s*(\d+)\.\s+(.+)$")
FIGURE = re.compile(r"<figure\b([^>]*)>(.*?)</figure>", re.S)
FIGCAPTION = re.compile(r"<figcaption\b([^>]*)>", re.S)
ID_ATTR = re.compile(r'\bid="([^"]+)"')
# <a href="…" …>text with a lone #</a>; the text may hold inline tags
REF = re.compile(r'<a\b([^>]*?)\bhref="([^"]*)"([^>]*)>((?:(?!</a>).)*?)</a>', re.S)
LONE_HASH = re.compile(r"(?<![\w#&])#(?![\w#])")
PENDING = "data-pending-ref"


def nav_numbers(nav) -> dict[str, tuple[str, str]]:
    """``{page url: (number, title without the number)}`` for numbered nav entries."""
    out: dict[str, tuple[str, str]] = {}
    for page in nav.pages:
        match = NAV_NUMBER.match(page.title or "")
        if match:
            out[page.url] = (match.group(1), match.group(2).strip())
    return out


def _target(page_url: str, href: str) -> tuple[str, str] | None:
    """The site url and fragment a link on ``page_url`` points to (None if external)."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc:
        return None
    if not parts.path:
        return page_url, parts.fragment
    base = page_url if (not page_url or page_url.endswith("/")) else posixpath.dirname(page_url)
    path = posixpath.normpath(posixpath.join(base, parts.path))
    path = "" if path == "." else path
    if parts.path.endswith("/") and path:
        path += "/"
    return path, parts.fragment


FIGURE_WORD = {"en": "Figure {number}", "zh": "图 {number}"}


def number_page(
    html: str, page_url: str, numbers: dict[str, tuple[str, str]], lang: str = "en"
) -> str:
    """Number the figures of one page and fill in the references it can resolve
    (``lang``: the edition, whose word the captions' numbers carry)."""
    word = FIGURE_WORD[lang]
    chapter = numbers.get(page_url, (None, None))[0]
    figures: dict[str, str] = {}
    count = 0

    def figure(match: re.Match) -> str:
        nonlocal count
        attrs, body = match.group(1), match.group(2)
        if "figure-number" in body:  # numbered already (a rebuilt page)
            return match.group(0)
        count += 1
        number = f"{chapter}.{count}" if chapter else str(count)
        ident = ID_ATTR.search(attrs)
        if ident:
            figures[ident.group(1)] = number
        if not FIGCAPTION.search(body):
            log.warning(
                "%s: figure %s (%s) has no caption",
                page_url or "home",
                number,
                ident.group(1) if ident else "no id",
            )
        body = FIGCAPTION.sub(
            lambda m: (
                f'<figcaption{m.group(1)}><span class="figure-number">'
                f"{word.format(number=number)}</span> — "
            ),
            body,
            count=1,
        )
        return f'<figure{attrs} data-number="{number}">{body}</figure>'

    html = FIGURE.sub(figure, html)

    def ref(match: re.Match) -> str:
        before, href, after, text = match.groups()
        if not LONE_HASH.search(_plain(text)):
            return match.group(0)
        target = _target(page_url, html_lib.unescape(href))
        if target is None:
            log.warning("%s: a numbered reference to an external link %s", page_url, href)
            return match.group(0)
        url, fragment = target
        if fragment.startswith("fig-"):
            if url == page_url:
                if fragment not in figures:
                    log.warning("%s: reference to a missing figure #%s", page_url, fragment)
                    return match.group(0)
                return _fill(match, figures[fragment])
            # another page's figure: known after the build (resolve_site)
            return f'<a{before}href="{href}"{after} {PENDING}="{url}#{fragment}">{text}</a>'
        if url not in numbers:
            log.warning("%s: numbered reference to an unnumbered page %s", page_url, href)
            return match.group(0)
        return _fill(match, numbers[url][0])

    return REF.sub(ref, html)


def figure_ids(html: str) -> set[str]:
    """The ids of the page's figures."""
    return set(re.findall(r'<figure\b[^>]*\bid="([^"]+)"', html))


def _plain(text: str) -> str:
    return re.sub(r"<[^>]+>", "", text)


def _fill(match: re.Match, number: str) -> str:
    before, href, after, text = match.groups()
    text = LONE_HASH.sub(number, text, count=1)
    return f'<a{before}href="{href}"{after}>{text}</a>'


def retitle_toc(html: str, toc) -> None:
    """Table-of-contents titles read the same as the headings after numbering."""
    for item in _walk(toc):
        heading = rf'<h[1-6][^>]*\bid="{re.escape(item.id)}"[^>]*>(.*?)</h[1-6]>'
        match = re.search(heading, html, re.S)
        if match and "#" in item.title:
            text = re.sub(r'<a class="headerlink".*?</a>', "", match.group(1), flags=re.S)
            item.title = html_lib.unescape(_plain(text)).strip()


def _walk(items):
    for item in items:
        yield item
        yield from _walk(item.children)


FIGURE_NUMBER = re.compile(r'<figure\b[^>]*\bid="(fig-[^"]+)"[^>]*\bdata-number="([^"]+)"')


def resolve_site(site_dir: str | Path, numbers: dict[str, tuple[str, str]]) -> None:
    """Fill in the references to figures on other pages, reading the built pages."""
    site = Path(site_dir)
    pages: dict[str, str] = {}
    for path in site.rglob("*.html"):
        url = path.relative_to(site).as_posix()
        url = url[: -len("index.html")] if url.endswith("index.html") else url
        pages[url] = path.read_text("utf-8")
    figures = {
        f"{url}#{ident}": number
        for url, text in pages.items()
        for ident, number in FIGURE_NUMBER.findall(text)
    }
    pending = re.compile(rf'<a\b([^>]*?) {PENDING}="([^"]+)"([^>]*)>((?:(?!</a>).)*?)</a>', re.S)
    for url, text in pages.items():
        if PENDING not in text:
            continue

        def fill(match: re.Match, url=url) -> str:
            before, key, after, inner = match.groups()
            if key not in figures:
                log.warning("%s: reference to a missing figure %s", url or "home", key)
                return f"<a{before}{after}>{inner}</a>"
            inner = LONE_HASH.sub(figures[key], inner, count=1)
            return f"<a{before}{after}>{inner}</a>"

        (site / (url + "index.html" if url.endswith("/") or not url else url)).write_text(
            pending.sub(fill, text), encoding="utf-8"
        )
