"""Compare two builds of the site page by page, on what the reader gets.

    python -m site_tools.engine_compare SITE_A SITE_B [--skip zh/]

Two engines (MkDocs with Material, Zensical) wrap a page in different theme
markup; this compares what a reader gets from each page, whatever the markup:

- ``outputs``: the executed output boxes (elements of class ``exec-output``),
  their text, in page order;
- ``figures``: each ``<figure>`` of the page's text, in order: its id, its
  number ("Figure 6.2", "图 6.2" at the start of its caption), its caption and
  the bytes of its pictures (an ``<img>``'s file in the site or its data URI,
  decoded; an inline ``<svg>`` as markup), and any ``<img>`` outside a figure;
- ``links``: the links of the page's text that lead to a chapter, or whose text
  is a numbered reference (chapter, figure or listing, numbered or still ``#``):
  where each leads, and its text;
- ``copies``: the page's copy texts, ``_copies/<page>.json`` (equal JSON);
- ``notebooks``: the notebooks in the page's folder, by name, their cells' kinds
  and sources, and where the page's links to notebooks lead (the download
  button);
- ``switch``: the language switch, the links with ``hreflang``: each language
  and the page it leads to;
- ``search``: whether the edition's search index (Material's
  ``search/search_index.json`` or Zensical's ``search.json``) holds the page.

A page is its ``index.html`` under the site (``404.html`` and ``assets/`` are
not pages); links and picture paths are resolved to paths in the site, so
that two engines' relative URLs compare as the places they lead to. A page
that one site lacks differs in every check. The table has one row per page
that differs (``--all``: every page), then each check's pages-equal/total; the
exit status is 1 when any page differs in any check.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, unquote_to_bytes, urljoin, urlsplit

from bs4 import BeautifulSoup, Tag

CHECKS = ("outputs", "figures", "links", "copies", "notebooks", "switch", "search")
SEARCH_INDEXES = ("search/search_index.json", "search.json")
# A numbered reference as the build writes it ("chapter 6", "Figure 6.2",
# "第 6 章", "图 6.2") or as it stands before numbering ("chapter #").
NUMBERED = re.compile(
    r"\b(chapter|figure|listing)s?\s+(#|\d)|第\s*(#|\d+)\s*章|(图|清单)\s*(#|\d)",
    re.IGNORECASE,
)
FIGURE_NUMBER = re.compile(r"^\s*(?:Figure|图)\s*(\d+(?:\.\d+)*|#)")


def _text(node: Tag) -> str:
    return " ".join(node.get_text(" ").split())


# --- where things are --------------------------------------------------------


def site_pages(site: Path, skip: tuple[str, ...] = ()) -> set[str]:
    """The pages of a built site, as URLs relative to its root ("", "notes/")."""
    pages = set()
    for path in site.rglob("index.html"):
        url = path.parent.relative_to(site).as_posix()
        url = "" if url == "." else url + "/"
        if url.startswith("assets/") or url.startswith(skip):
            continue
        pages.add(url)
    return pages


def site_path(page: str, href: str) -> str | None:
    """Where ``href`` on ``page`` leads, as a path in the site (the fragment
    kept after ``#``, a folder's ``index.html`` dropped), or None when it
    leaves the site (another host, ``mailto:``, a data URI)."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc:
        return None
    target = urlsplit(urljoin("/" + page, href))
    path = unquote(target.path).lstrip("/")
    if path.endswith("index.html"):
        path = path[: -len("index.html")]
    return path + (f"#{target.fragment}" if target.fragment else "")


def picture_bytes(site: Path, page: str, src: str) -> bytes | str:
    """The bytes of a picture: a data URI decoded, else its file in the site
    (a description of what is missing when it cannot be read)."""
    if src.startswith("data:"):
        head, _, data = src.partition(",")
        if head.endswith(";base64"):
            return base64.b64decode(data)
        return unquote_to_bytes(data)
    path = site_path(page, src)
    if path is None:
        return f"outside the site: {src}"
    file = site / path.split("#")[0]
    try:
        return file.read_bytes()
    except OSError:
        return f"missing: {path}"


def _digest(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    return hashlib.sha256(data).hexdigest()[:16]


# --- one page, as the reader gets it -----------------------------------------


@dataclass
class PageView:
    """What one page gives its reader (see the module's docstring)."""

    outputs: list[str] = field(default_factory=list)
    figures: list[tuple] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    switch: list[tuple[str, str]] = field(default_factory=list)
    notebook_links: list[str] = field(default_factory=list)


def _figure(site: Path, page: str, figure: Tag) -> tuple:
    caption = figure.find("figcaption")
    text = _text(caption) if caption else ""
    number = FIGURE_NUMBER.match(text)
    pictures = []
    for node in figure.find_all(["img", "svg"]):
        if node.name == "img":
            pictures.append(_digest(picture_bytes(site, page, node.get("src", ""))))
        elif node.find_parent("svg") is None:  # the outer <svg> of a drawing
            pictures.append(_digest(str(node).encode()))
    return (
        figure.get("id"),
        number.group(1) if number else None,
        text,
        tuple(pictures),
    )


def _is_chapter(target: str) -> bool:
    """Whether a path in the site is a chapter page (not a file beside one)."""
    path = target.split("#")[0]
    return path.startswith(("chapters/", "zh/chapters/")) and path.endswith("/")


def read_page(site: Path, page: str) -> PageView | None:
    """The page's outputs, figures, numbered links and language switch, or None
    when the site has no such page."""
    file = site / page / "index.html"
    if not file.is_file():
        return None
    soup = BeautifulSoup(file.read_text("utf-8"), "html.parser")
    text = soup.find("article") or soup.body or soup
    view = PageView()
    view.outputs = [node.get_text() for node in soup.find_all(class_="exec-output")]
    for figure in text.find_all("figure"):
        view.figures.append(_figure(site, page, figure))
    for img in text.find_all("img"):
        if img.find_parent("figure") is None:
            picture = picture_bytes(site, page, img.get("src", ""))
            view.figures.append((None, None, img.get("alt", ""), (_digest(picture),)))
    for a in text.find_all("a", href=True):
        if "headerlink" in a.get("class", []):
            continue  # the heading's permalink
        target = site_path(page, a["href"])
        label = _text(a)
        if target is None:
            continue
        if target.split("#")[0].endswith(".ipynb"):
            view.notebook_links.append(target)  # the download button
        elif _is_chapter(target) or NUMBERED.search(label):
            view.links.append((target, label))
    for a in soup.find_all("a", hreflang=True, href=True):
        target = site_path(page, a["href"])
        view.switch.append((a["hreflang"], a["href"] if target is None else target))
    view.switch.sort()
    return view


def page_copies(site: Path, page: str) -> object | None:
    """The page's copy texts (``_copies/chapters--masks.json`` for
    ``chapters/masks/``, under its edition's root), or None."""
    for root in _roots(page):
        name = page[len(root) :].strip("/").replace("/", "--") or "index"
        file = site / root / "_copies" / f"{name}.json"
        if file.is_file():
            return json.loads(file.read_text("utf-8"))
    return None


def page_notebooks(site: Path, page: str) -> dict[str, list[tuple[str, str]]]:
    """The notebooks in the page's folder: name -> (cell kind, source) per cell."""
    found = {}
    for file in sorted((site / page).glob("*.ipynb")):
        try:
            cells = json.loads(file.read_text("utf-8")).get("cells", [])
        except ValueError:
            found[file.name] = [("unreadable", "")]
            continue
        found[file.name] = [
            (
                cell.get("cell_type", ""),
                "".join(cell["source"])
                if isinstance(cell.get("source"), list)
                else cell.get("source", ""),
            )
            for cell in cells
        ]
    return found


def _roots(page: str) -> list[str]:
    """The folders above a page, nearest first ("zh/notes/" -> zh/notes/, zh/, "")."""
    parts = page.strip("/").split("/") if page else []
    return ["/".join(parts[:i]) + "/" if i else "" for i in range(len(parts), -1, -1)]


class SearchIndexes:
    """The search indexes of a site, read once each: which pages they hold."""

    def __init__(self, site: Path):
        self.site = site
        self._read: dict[str, set[str] | None] = {}

    def _pages(self, root: str) -> set[str] | None:
        if root not in self._read:
            self._read[root] = None
            for name in SEARCH_INDEXES:
                file = self.site / root / name
                if file.is_file():
                    self._read[root] = _indexed_pages(json.loads(file.read_text("utf-8")))
                    break
        return self._read[root]

    def holds(self, page: str) -> bool:
        """Whether the nearest search index above the page holds it."""
        for root in _roots(page):
            pages = self._pages(root)
            if pages is not None:
                return page[len(root) :] in pages
        return False


def _indexed_pages(index: object) -> set[str]:
    """The pages an index's entries point to (Material: ``docs[].location``;
    Zensical: ``items[].location``), without their fragments."""
    entries = []
    if isinstance(index, dict):
        for key in ("docs", "items"):
            if isinstance(index.get(key), list):
                entries = index[key]
                break
    elif isinstance(index, list):
        entries = index
    pages = set()
    for entry in entries:
        if isinstance(entry, dict):
            where = entry.get("location", entry.get("url"))
            if isinstance(where, str):
                path = where.split("#")[0].lstrip("./")
                if path.endswith("index.html"):
                    path = path[: -len("index.html")]
                pages.add(path)
    return pages


# --- two sites ---------------------------------------------------------------


@dataclass
class Row:
    """One page: per check, whether both sites agree, and a short why if not."""

    page: str
    differs: dict[str, str] = field(default_factory=dict)


def _count(view: PageView, what: str) -> str:
    items = getattr(view, what)
    if what == "figures":
        numbered = sum(1 for f in items if f[1] not in (None, "#"))
        return f"{len(items)} ({numbered} numbered)"
    return str(len(items))


def _first_difference(a: list, b: list) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"#{i + 1}: {str(x)[:60]!r} / {str(y)[:60]!r}"
    return f"{len(a)} / {len(b)}"


def compare_page(
    site_a: Path,
    site_b: Path,
    page: str,
    search: tuple[SearchIndexes, SearchIndexes],
) -> Row:
    """Compare one page of two sites on every check."""
    row = Row(page)
    a, b = read_page(site_a, page), read_page(site_b, page)
    if a is None or b is None:  # one site lacks the page (a page is in one of them)
        where = "no page / page" if a is None else "page / no page"
        row.differs = dict.fromkeys(CHECKS, where)
        return row
    for what in ("outputs", "figures", "links", "switch"):
        x, y = getattr(a, what), getattr(b, what)
        if x != y:
            counts = f"{_count(a, what)} / {_count(b, what)}"
            row.differs[what] = _first_difference(x, y) if len(x) == len(y) else counts
    copies = page_copies(site_a, page), page_copies(site_b, page)
    if copies[0] != copies[1]:
        row.differs["copies"] = " / ".join(
            "none" if c is None else f"{len(c.get('blocks', []))} blocks" for c in copies
        )
    books = page_notebooks(site_a, page), page_notebooks(site_b, page)
    buttons = sorted(a.notebook_links), sorted(b.notebook_links)
    if books[0] != books[1] or buttons[0] != buttons[1]:
        row.differs["notebooks"] = " / ".join(
            f"{', '.join(sorted(book)) or 'none'} ({len(links)} links)"
            for book, links in zip(books, buttons, strict=True)
        )
    held = search[0].holds(page), search[1].holds(page)
    if held[0] != held[1]:
        row.differs["search"] = " / ".join("indexed" if h else "not indexed" for h in held)
    return row


def compare_sites(site_a: Path, site_b: Path, skip: tuple[str, ...] = ()) -> list[Row]:
    """One row per page of either site, in URL order."""
    pages = sorted(site_pages(site_a, skip) | site_pages(site_b, skip))
    search = SearchIndexes(site_a), SearchIndexes(site_b)
    return [compare_page(site_a, site_b, page, search) for page in pages]


def report(rows: list[Row], every_page: bool = False) -> str:
    """The table: a row per differing page (or every page), then the totals."""
    lines = []
    width = max([len(r.page or "/") for r in rows] + [4])
    head = f"{'page':<{width}}  " + "  ".join(f"{c:<9}" for c in CHECKS)
    lines.append(head)
    lines.append("-" * len(head))
    for row in rows:
        if row.differs or every_page:
            cells = ["differs" if c in row.differs else "=" for c in CHECKS]
            lines.append(f"{row.page or '/':<{width}}  " + "  ".join(f"{c:<9}" for c in cells))
    lines.append("")
    for row in rows:
        for check in CHECKS:
            if check in row.differs:
                lines.append(f"{row.page or '/'} {check}: {row.differs[check]}")
    lines.append("")
    for check in CHECKS:
        equal = sum(1 for r in rows if check not in r.differs)
        lines.append(f"{check:<10} {equal}/{len(rows)} pages equal")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m site_tools.engine_compare", description=__doc__.split("\n")[0]
    )
    parser.add_argument("site_a", type=Path)
    parser.add_argument("site_b", type=Path)
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        help="leave out the pages under this folder (e.g. zh/); repeatable",
    )
    parser.add_argument("--all", action="store_true", help="a row for every page")
    args = parser.parse_args(argv)
    for site in (args.site_a, args.site_b):
        if not site.is_dir():
            parser.error(f"{site} is not a folder (a built site)")
    rows = compare_sites(args.site_a, args.site_b, tuple(args.skip))
    print(report(rows, args.all))
    return 1 if any(row.differs for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
