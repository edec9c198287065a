"""The Chinese edition (``docs-zh/``, built by ``mkdocs.zh.yml`` into ``site/zh``).

Its command line::

    python -m site_tools.edition stale              # pages whose translation is pending or older
    python -m site_tools.edition placeholder PAGE   # docs-zh/PAGE from docs/PAGE, pending
    python -m site_tools.edition stamp PAGE...      # record the English text a page now matches
    python -m site_tools.edition ids PAGE           # the English page's heading ids, in order
    python -m site_tools.edition check PAGE...      # parity, terms and style of Chinese pages
    python -m site_tools.edition comments           # the listings' comments and their Chinese
    python -m site_tools.edition style --fix PAGE   # spacing and punctuation (autocorrect)
    python -m site_tools.edition glossary           # write docs-zh/glossary.md from the term table
    python -m site_tools.edition diagrams           # write diagrams/zh/ from i18n/diagrams.zh.yml

PAGE is a path relative to ``docs/`` (``chapters/masks.md``) or a ``docs-zh/`` path.
"""

from __future__ import annotations

import argparse
import sys

from site_tools.edition.comments import listing_comment_problems, listing_comments
from site_tools.edition.diagrams import write_diagrams
from site_tools.edition.page_check import parity_problems
from site_tools.edition.pages import (
    chinese_path,
    english_path,
    headings,
    parts,
    placeholder,
    source_hash,
    stale_pages,
    stamp,
)
from site_tools.edition.style import style_fix, style_problems
from site_tools.edition.terms import write_glossary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m site_tools.edition", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("stale", help="list pages whose translation is pending, older or missing")
    for name in ("placeholder", "stamp", "ids", "check"):
        sub.add_parser(name).add_argument("pages", nargs="+")
    style = sub.add_parser("style")
    style.add_argument("--fix", action="store_true")
    style.add_argument("pages", nargs="+")
    sub.add_parser("glossary")
    sub.add_parser(
        "comments", help="listing comments of the Chinese pages without Chinese, stale entries"
    )
    sub.add_parser("diagrams", help="write diagrams/zh/*.svg from i18n/diagrams.zh.yml")
    args = parser.parse_args(argv)
    if args.command == "stale":
        found = stale_pages()
        for page, state in found:
            print(f"{state:8} docs-zh/{page}")
        return 0
    if args.command == "placeholder":
        for page in args.pages:
            print(placeholder(page))
        return 0
    if args.command == "stamp":
        for page in args.pages:
            print(stamp(page), source_hash(page))
        return 0
    if args.command == "ids":
        for page in args.pages:
            for number, ident, text in headings(parts(english_path(page))[1]):
                print(f"{number:5}  {{ #{ident} }}  {text}")
        return 0
    if args.command == "check":
        problems = [p for page in args.pages for p in parity_problems(page)]
        problems += listing_comment_problems([p for p in args.pages if p.endswith(".md")])
        print("\n".join(problems) or "no problems")
        return 1 if problems else 0
    if args.command == "comments":
        problems = listing_comment_problems()
        print("\n".join(problems) or f"no problems: {len(listing_comments())} comments")
        return 1 if problems else 0
    if args.command == "style":
        failed = 0
        for page in args.pages:
            path = chinese_path(page)
            text = path.read_text("utf-8")
            if args.fix:
                path.write_text(style_fix(text), "utf-8")
            for problem in style_problems(path.read_text("utf-8")):
                print(f"{path}: {problem}")
                failed = 1
        return failed
    if args.command == "diagrams":
        for path in write_diagrams():
            print(path)
        return 0
    if args.command == "glossary":
        print(write_glossary())
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
