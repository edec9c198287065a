"""The page's start and end, as a Markdown extension (any engine that renders
pages with Python-Markdown runs it: MkDocs, ProperDocs, Zensical).

- Before anything else reads the page (a preprocessor that runs first), every
  session of the Python fence is forgotten -- a reader pastes each page into a
  fresh interpreter -- and, unless the MkDocs plugin opened it already, the page
  is opened in the store of executed outputs (:mod:`site_tools.engine.store`),
  whose outputs the fences then show: filled before the engine renders
  (``python -m site_tools.prebuild``), or by a run of the page's program in a fresh
  interpreter of its own now. A block is never executed inside the engine's process,
  where state would leak from page to page.
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

from site_tools.engine import captions, fences, store

log = logging.getLogger("mkdocs.extensions.site_tools.engine.pages")


class _PageStart(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        if fences.formatting_a_block():  # a block's own Markdown, not a page
            return lines
        fences.reset_sessions()
        text = "\n".join(lines)
        if not store.is_open(text):  # another engine than MkDocs: no plugin opened it
            store.open_page(text, _other_engines_page(self.md))
        return lines


def _other_engines_page(md) -> str:
    """The page's path, where the engine tells it (Zensical's page context), for the
    store's log (else ``page``); a chapter's page is given its notebook's name, for the
    download button of overrides/main.html, as the MkDocs plugin gives it."""
    try:
        from zensical.extensions.context import ContextPreprocessor
    except ImportError:
        return "page"
    context = ContextPreprocessor.from_markdown(md)
    if context is None:
        return "page"
    path = str(context.page.path)
    if path.startswith("chapters/") and path.endswith(".md"):
        from site_tools.outputs.notebooks import notebook_name

        context.page.meta["notebook"] = notebook_name(path[: -len(".md")] + "/")
    return path


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
