"""The page's start and end, as a Markdown extension (any engine that renders
pages with Python-Markdown runs it: MkDocs, ProperDocs, Zensical).

- Before anything else reads the page (a preprocessor that runs first), every
  session of the Python fence is forgotten -- a reader pastes each page into a
  fresh interpreter -- for Markdown rendered outside a build. (The build's hook
  opens each page in the store of executed outputs, :mod:`site_tools.engine.store`,
  which runs the page's program in a fresh interpreter of its own.)
- After the page is HTML (a postprocessor that runs last), the figures'
  captions and alt texts, written as paragraphs after the blocks that draw
  them, are moved into the figures (:func:`site_tools.engine.captions.attach_text`). A
  problem there is logged as a warning, which fails ``mkdocs build --strict``.

"""

from __future__ import annotations

import logging

from markdown import Extension
from markdown.postprocessors import Postprocessor
from markdown.preprocessors import Preprocessor

from site_tools.engine import captions, fences

log = logging.getLogger("mkdocs.extensions.site_tools.engine.pages")


class _PageStart(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        if fences.formatting_a_block():  # a block's own Markdown, not a page
            return lines
        fences.reset_sessions()
        return lines


class _Figures(Postprocessor):
    def run(self, text: str) -> str:
        text, problems = captions.attach_text(text)
        for problem in problems:
            log.warning("%s", problem)
        return text


class PageExtension(Extension):
    def extendMarkdown(self, md) -> None:  # noqa: N802  (Python-Markdown's name)
        md.preprocessors.register(_PageStart(md), "site_tools_page_start", 1000)
        md.postprocessors.register(_Figures(md), "site_tools_figures", 0)


def makeExtension(**kwargs) -> PageExtension:  # noqa: N802
    return PageExtension(**kwargs)
