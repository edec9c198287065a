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
because a page's figures are only known once its code has run. Pages are read
with BeautifulSoup and edited in their own text (:mod:`site_tools.engine.markup`):
a numbered page differs from the page it was given only where a number went in.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from urllib.parse import urlsplit

from site_tools.engine.markup import Source

log = logging.getLogger("mkdocs.plugins.numbering")

NAV_NUMBER = re.compile(r"^\s*(\d+)\.\s+(.+)$")
# A lone "#" in a link's text, as the page's source writes it (not "C#", "##", "&#35;")
LONE_HASH = re.compile(r"(?<![\w#&])#(?![\w#])")
PENDING = "data-pending-ref"
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


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
    page = Source(html, "figure", "a")
    figures: dict[str, str] = {}
    count = 0
    for figure in page.soup.find_all("figure"):
        if figure.find(class_="figure-number"):  # numbered already (a rebuilt page)
            continue
        count += 1
        number = f"{chapter}.{count}" if chapter else str(count)
        ident = figure.get("id")
        if ident:
            figures[ident] = number
        caption = figure.find("figcaption")
        if caption is None:
            log.warning(
                "%s: figure %s (%s) has no caption", page_url or "home", number, ident or "no id"
            )
        else:
            words = f'<span class="figure-number">{word.format(number=number)}</span> — '
            page.insert(page.inner_start(caption), words)
        page.insert(page.inner_start(figure) - 1, f' data-number="{number}"')
    for link in page.soup.find_all("a", href=True):
        lone = _lone_hash(page, link)
        if lone is None:
            continue
        href = link["href"]
        target = _target(page_url, href)
        if target is None:
            log.warning("%s: a numbered reference to an external link %s", page_url, href)
            continue
        url, fragment = target
        if fragment.startswith("fig-"):
            if url != page_url:  # another page's figure: known after the build (resolve_site)
                page.insert(page.inner_start(link) - 1, f' {PENDING}="{url}#{fragment}"')
            elif fragment not in figures:
                log.warning("%s: reference to a missing figure #%s", page_url, fragment)
            else:
                page.replace(*lone, figures[fragment])
        elif url not in numbers:
            log.warning("%s: numbered reference to an unnumbered page %s", page_url, href)
        else:
            page.replace(*lone, numbers[url][0])
    return page.edited()


def _lone_hash(page: Source, link) -> tuple[int, int] | None:
    """Where the first lone ``#`` of the link's text stands in the page (None if none)."""
    if "#" not in link.get_text():
        return None
    for string in link.strings:
        if "#" in string:
            start, end = page.string_span(string)
            found = LONE_HASH.search(page.text[start:end])
            if found:
                return start + found.start(), start + found.end()
    return None


def figure_ids(html: str) -> set[str]:
    """The ids of the page's figures."""
    found = Source(html, "figure", "a").soup.find_all("figure", id=True)  # number_page's parse
    return {figure["id"] for figure in found if figure["id"]}


def retitle_toc(html: str, toc) -> None:
    """Table-of-contents titles read the same as the headings after numbering."""
    items = [item for item in _walk(toc) if "#" in item.title]
    if not items:
        return
    soup = Source(html, *HEADINGS).soup
    for item in items:
        heading = soup.find(HEADINGS, id=item.id)
        if heading is not None:
            words = (w for w in heading.strings if not _in_headerlink(w, heading))
            item.title = "".join(words).strip()


def _in_headerlink(string, heading) -> bool:
    return any(
        parent.name == "a" and "headerlink" in (parent.get("class") or [])
        for parent in string.parents
        if parent is not heading
    )


def _walk(items):
    for item in items:
        yield item
        yield from _walk(item.children)


def resolve_site(site_dir: str | Path, numbers: dict[str, tuple[str, str]]) -> None:
    """Fill in the references to figures on other pages, reading the built pages."""
    site = Path(site_dir)
    paths: dict[str, Path] = {}
    for path in site.rglob("*.html"):
        url = path.relative_to(site).as_posix()
        paths[url[: -len("index.html")] if url.endswith("index.html") else url] = path
    numbered: dict[str, dict[str, str]] = {}  # url -> {figure id: number}, pages read once

    def number_of(key: str) -> str | None:
        url, _, ident = key.partition("#")
        if url not in numbered:
            text = paths[url].read_text("utf-8") if url in paths else ""
            found = Source(text, "figure").soup.find_all("figure", id=True)
            numbered[url] = {f["id"]: f["data-number"] for f in found if f.has_attr("data-number")}
        return numbered[url].get(ident)

    for url, path in paths.items():
        text = path.read_text("utf-8")
        if PENDING not in text:
            continue
        page = Source(text, "a")
        for link in page.soup.find_all("a", attrs={PENDING: True}):
            key = link[PENDING]
            start = page.text.index(f' {PENDING}="', page.start(link), page.inner_start(link))
            page.replace(start, page.text.index('"', start + len(PENDING) + 3) + 1, "")
            number = number_of(key)
            lone = _lone_hash(page, link)
            if number is None:
                log.warning("%s: reference to a missing figure %s", url or "home", key)
            elif lone is not None:
                page.replace(*lone, number)
        path.write_text(page.edited(), encoding="utf-8")
