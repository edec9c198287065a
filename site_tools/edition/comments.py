"""The comments of the listings a Chinese page includes from ``attention_src``, in Chinese.

A listing shows, and copies, the module's code; the Chinese build writes its comments in
Chinese from one table, ``i18n/comments.zh.yml`` (English comment -> Chinese), by
:func:`translate_comments` (comments only, found by Python's tokenize: code, strings and
docstrings are the module's): in the built page's HTML (:func:`chinese_listings`) and in
the copy texts it records (:func:`chinese_copies`). :func:`listing_comment_problems`
holds the table to the listings (``python -m site_tools.edition comments``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from site_tools.edition.pages import HAN, ROOT, chinese_pages, chinese_path, relative
from site_tools.edition.terms import term_phrases, terms

COMMENTS = ROOT / "i18n" / "comments.zh.yml"
CODE_BOX_COLUMNS = 84  # the width of a code box on the page (docs/contributing.md)
PRAGMA = re.compile(r"^#\s*(noqa\b|fmt:|type:|pragma\b|pyright:|ruff:|isort:|nosec\b)")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./'’-]*(?P<call>\()?")
CODE_WORDS = frozenset({"True", "False", "None", "Dh", "Dk", "Dv"})  # and the shape names
_QUOTED = re.compile(r"`[^`]*`|'[^']*'|\"[^\"]*\"|“[^”]*”")


def display_width(text: str) -> int:
    """Columns a monospace code box gives ``text``: a wide (Chinese) character takes two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def foreign_words(comment: str, names: frozenset[str], phrases: list[str]) -> list[str]:
    """The comment's Latin words that are not code names, names, quotes or the table's terms."""
    text = _QUOTED.sub(" ", comment.lstrip("#"))
    for phrase in phrases:
        text = re.sub(rf"(?<![A-Za-z]){re.escape(phrase)}(?![A-Za-z])", " ", text, flags=re.I)
    found = []
    for match in _WORD.finditer(text):
        word = match[0].rstrip("(").strip(".'’/-")
        if not word or word in names or word in CODE_WORDS or match["call"]:
            continue  # a name in the code, True, a call: sqrt(D)
        if any(c in "0123456789_./" for c in word) or any(c.isupper() for c in word[1:]):
            continue  # code or a path (float16, d_k, nn.Embedding), a name (PyTorch, NaN)
        found.append(word)
    return found


def comment_is_english(
    comment: str, names: frozenset[str] = frozenset(), phrases: list[str] | None = None
) -> bool:
    """True when the comment has a Latin word of four or more letters that is not code or
    a term, and its Chinese characters are not most of its words' text (so an English
    comment with one Chinese character added is still English)."""
    if PRAGMA.match(comment):
        return False
    words = foreign_words(comment, names, term_phrases() if phrases is None else phrases)
    if not any(sum(c.isalpha() for c in w) >= 4 for w in words):
        return False  # shape-only, or only code names and terms
    han = len(HAN.findall(comment))
    latin = sum(sum(c.isalpha() for c in w) for w in words)
    return han <= latin


def comment_key(comment: str) -> str:
    """A comment's entry in the table: its text after ``#`` and the spaces after it."""
    return comment[1:].strip() if comment.startswith("#") else comment.strip()


def comment_table() -> dict[str, str]:
    """``{English comment: Chinese comment}`` (``i18n/comments.zh.yml``), read again when
    the file changes (``./dev.sh serve`` lives on between rebuilds)."""
    stamp = COMMENTS.stat().st_mtime_ns if COMMENTS.exists() else None
    return _read_comment_table(COMMENTS, stamp)


@lru_cache(maxsize=1)
def _read_comment_table(path: Path, stamp: int | None) -> dict[str, str]:
    import yaml

    table = yaml.safe_load(path.read_text("utf-8") if stamp is not None else "") or {}
    return {str(k): str(v) for k, v in table.items()}


def code_comments(code: str) -> list[tuple[int, int, str]]:
    """``(line, column, comment)`` of each comment in ``code`` (1-based lines), found by
    Python's tokenize: a ``#`` inside a string or a docstring is not a comment."""
    import io
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError) as error:
        raise ValueError(
            f"cannot read the comments of this code ({error}):\n{code[:300]}"
        ) from error
    return [(t.start[0], t.start[1], t.string) for t in tokens if t.type == tokenize.COMMENT]


def translate_comments(code: str, table: dict[str, str] | None = None) -> str:
    """``code`` with each comment the table knows written in Chinese (``# 中文``); every
    other character, strings and docstrings included, as it was. Lines stay lines."""
    table = comment_table() if table is None else table
    lines = code.split("\n")
    for line, column, comment in reversed(code_comments(code)):
        chinese = table.get(comment_key(comment))
        if chinese is not None:
            text = lines[line - 1]
            lines[line - 1] = text[:column] + f"# {chinese}" + text[column + len(comment) :]
    return "\n".join(lines)


@dataclass(frozen=True)
class ListingComment:
    """A comment of the code a Chinese page shows or copies from ``attention_src``."""

    listing: str  # the module's file: attention_src/masks.py
    line: int  # its line in that file (0: not found there)
    column: int  # where the "#" is in the line
    comment: str  # from the "#"
    code_line: str  # the copy text's whole line, in English
    names: frozenset[str]  # the names in the copy's code
    page: str  # the first Chinese page that includes it


def listing_comments(pages: list[str] | None = None) -> list[ListingComment]:
    """The comments of every listing the Chinese pages include, in their copy texts (the
    shown region, and the helpers and the rest of the class the copy adds), each once."""
    import io
    import tokenize

    from site_tools.engine import program

    found: dict[tuple[str, int, str], ListingComment] = {}
    sources: dict[str, list[str]] = {}
    for page in chinese_pages() if pages is None else [relative(p) for p in pages]:
        path = chinese_path(page)
        if path.suffix != ".md":
            continue
        for block in program.page_program(path.read_text("utf-8")):
            if block.kind != "listing":
                continue
            if block.listing not in sources:
                sources[block.listing] = (ROOT / block.listing).read_text("utf-8").splitlines()
            source = sources[block.listing]
            code_lines = block.code.split("\n")
            tokens = tokenize.generate_tokens(io.StringIO(block.code).readline)
            names = frozenset(t.string for t in tokens if t.type == tokenize.NAME)
            for line, column, comment in code_comments(block.code):
                text = code_lines[line - 1]
                number = next((n for n, s in enumerate(source, 1) if s == text), 0)
                key = (block.listing, number, comment)
                if key not in found:
                    found[key] = ListingComment(
                        block.listing, number, column, comment, text, names, page
                    )
    return list(found.values())


def _entry_line(key: str) -> int:
    """The line of ``key``'s entry in i18n/comments.zh.yml (0 if not found)."""
    import yaml

    node = yaml.compose(COMMENTS.read_text("utf-8"))
    for k, _ in node.value if node is not None else []:
        if k.value == key:
            return k.start_mark.line + 1
    return 0


def listing_comment_problems(pages: list[str] | None = None) -> list[str]:
    """What keeps the listings of the Chinese pages from showing Chinese comments: an English
    comment with no entry in the table (the module's file and line), an entry whose English
    no listing has any more (the table's line; only when every page is checked), and a
    translation that is English, uses a word the term table avoids, or makes its line wider
    than the code box."""
    table = comment_table()
    phrases = term_phrases()
    term_table = terms()
    name = COMMENTS.relative_to(ROOT).as_posix() if COMMENTS.is_relative_to(ROOT) else COMMENTS.name
    problems = []
    comments = listing_comments(pages)
    for c in comments:
        where = f"{c.listing}:{c.line}: {c.comment!r} (on docs-zh/{c.page})"
        key = comment_key(c.comment)
        if key not in table:
            if comment_is_english(c.comment, c.names, phrases):
                problems.append(f"{where} has no Chinese in {name}")
            continue
        shown = f"{c.code_line[: c.column]}# {table[key]}"
        if comment_is_english(f"# {table[key]}", c.names, phrases):
            problems.append(f"{where}: its Chinese {table[key]!r} is English")
        if display_width(shown) > CODE_BOX_COLUMNS:
            problems.append(
                f"{where}: in Chinese the line is {display_width(shown)} columns, "
                f"the code box has {CODE_BOX_COLUMNS}"
            )
        for entry in term_table.values():
            for word in entry.get("avoid") or []:
                if word in table[key]:
                    problems.append(f"{where}: {word!r}, the term table says {entry['zh']!r}")
    if pages is None:
        used = {comment_key(c.comment) for c in comments}
        for key in table:
            if key not in used:
                problems.append(
                    f"{name}:{_entry_line(key)}: {key!r}: no listing on a Chinese page has "
                    "this comment any more (its English changed, or the listing went)"
                )
    return problems


# The Chinese build writes the listings' comments in Chinese, in the HTML (what a page shows
# and its copy buttons copy) and in the copy texts it records (_copies): both from the
# English copy (site_tools/engine/copytext.py computes it from the English region, the rest
# of its class included), so a Chinese copy is the English copy as code, whole.
#
# A listing is found by the start tag copytext.add_listing_copies writes and the end of its
# code box, and read by BeautifulSoup; what changes (the data-copy attribute, the text of
# the comment spans) is written back where BeautifulSoup found it, so that every other byte
# of the page stays as it was. The page is not parsed whole: html.parser over the Chinese
# pages whole takes about 4 s of CPU a build, over their listings alone about 0.6 s.
_LISTING_START = '<div class="language-python highlight listing"'
_LISTING_END = "</code></pre></div>"


def code_text(box_html: str) -> str:
    """The text of the (first) ``<code>`` in a code box's HTML, as the page shows it."""
    from bs4 import BeautifulSoup

    return BeautifulSoup(box_html, "html.parser").find("code").get_text()


def chinese_listings(page_html: str, table: dict[str, str] | None = None) -> str:
    """A built page's listings (``div.listing``,
    :func:`site_tools.engine.copytext.add_listing_copies`) with their comments in
    Chinese: the copy text (``data-copy``) by
    :func:`translate_comments`, the highlighted code by its comment tokens (Pygments'
    ``c1`` spans), checked to read exactly as the copy's lines do.

    Raises:
        ValueError: when the shown code, so translated, is not the English shown code
            translated by :func:`translate_comments` (a comment Pygments split), or a
            listing's bytes are not where and as BeautifulSoup read them.
    """
    table = comment_table() if table is None else table
    out, done = [], 0
    start = page_html.find(_LISTING_START)
    while start >= 0:
        end = page_html.find(_LISTING_END, start)
        if end < 0:
            break
        end += len(_LISTING_END)
        out += [page_html[done:start], _chinese_listing(page_html[start:end], table)]
        done = end
        start = page_html.find(_LISTING_START, end)
    return "".join([*out, page_html[done:]])


def _chinese_listing(listing: str, table: dict[str, str]) -> str:
    """One listing's HTML (its ``div``, whole) with its comments in Chinese."""
    import html

    from bs4 import BeautifulSoup, NavigableString

    div = BeautifulSoup(listing, "html.parser").div
    code = div.find("code") if div is not None else None
    if code is None or not div.has_attr("data-copy"):
        return listing
    lines = [0] + [found.end() for found in re.finditer("\n", listing)]  # html.parser's lines

    def at(tag) -> int:  # where BeautifulSoup found the tag: its "<" in the listing
        return lines[tag.sourceline - 1] + tag.sourcepos

    def unread(what: str) -> ValueError:
        return ValueError(
            f"{what} is not where and as BeautifulSoup read it (site_tools/edition/"
            f"comments.py, chinese_listings):\n{listing[:400]}"
        )

    english = code.get_text()
    edits = []  # (start, end, new text) in the listing
    for span in code.find_all("span"):
        text = span.contents[0] if len(span.contents) == 1 else None
        if span.get("class") != ["c1"] or type(text) is not NavigableString:
            continue  # not a comment token's text
        chinese = table.get(comment_key(text)) if text.startswith("#") else None
        if chinese is None:
            continue
        opened = listing.index(">", at(span)) + 1
        closed = listing.index("<", opened)
        if html.unescape(listing[opened:closed]) != text or not listing.startswith(
            "</span>", closed
        ):
            raise unread(f"a comment's text {str(text)!r}")
        edits.append((opened, closed, html.escape(f"# {chinese}", quote=False)))
        text.replace_with(f"# {chinese}")
    if code.get_text() != translate_comments(english, table):
        raise ValueError(
            "a listing's comments could not be written in Chinese in its HTML as in "
            "its copy text (site_tools/edition/comments.py, chinese_listings):\n" + english[:400]
        )
    # data-copy, in the start tag (up to the div's first child), as copytext writes it
    value = html.escape(div["data-copy"], quote=True)
    copied = f'data-copy="{value}"'
    child = div.find(True)
    head = listing[: at(child)] if child is not None else ""
    if at(div) != 0 or head.count(copied) != 1:
        raise unread("the listing's data-copy")
    copy = translate_comments(div["data-copy"], table)
    start = head.index(copied) + len('data-copy="')
    edits.append((start, start + len(value), html.escape(copy, quote=True)))
    for start, end, new in sorted(edits, reverse=True):
        listing = listing[:start] + new + listing[end:]
    return listing


def chinese_copies(path: str | Path, table: dict[str, str] | None = None) -> Path:
    """Write the listings' comments in Chinese in a page's copy texts
    (``<site>/_copies/<page>.json``, :func:`site_tools.engine.program.write_copies`): each
    listing's copy and shown text, as :func:`chinese_listings` writes them on the page."""
    path = Path(path)
    table = comment_table() if table is None else table
    data = json.loads(path.read_text("utf-8"))
    for block in data["blocks"]:
        if block.get("listing"):
            block["code"] = translate_comments(block["code"], table)
            block["shown"] = translate_comments(block["shown"], table)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    return path
