"""The Python fence of the site: markdown-exec's, run by our own small runner.

    ```python exec="on" source="above" session="page" result="text"
    print(softmax(torch.tensor([1.0, 2.0])))
    ```

runs the block during the build and shows its code, then what it printed in an
output box (class ``exec-output``, no copy button: a reader copies code, not
output). ``raises="ValueError"`` shows a failure live: the block must raise
exactly that exception, whose message is shown under the code; if it raises
something else, or nothing, the build warns (and ``mkdocs build --strict``
fails), so a page can never claim an error that the code no longer makes.
The code box of such a block carries ``data-raises``, which the doc tests read.

In the build a page runs as one program, in a fresh interpreter of its own:
what its copy buttons give, in page order (:mod:`site_tools.engine.program`); this
fence shows the output that run captured for the block, from the store of
executed outputs (:mod:`site_tools.engine.store`), so each block runs once, whoever
asks. Outside a page opened in the store (Markdown rendered on its own),
blocks with the same ``session=`` share one namespace, as a reader's Python
session would, and every page starts with fresh sessions
(:func:`reset_sessions`). Only markdown-exec's public API is used.
"""

from __future__ import annotations

import builtins
import contextlib
import html
import io
import linecache
import traceback
from itertools import count

from markdown_exec import (
    ExecutionError,
    base_format,
    validator,  # noqa: F401  (re-exported for mkdocs.yml)
)

from site_tools.engine import store
from site_tools.engine.markup import Source, classes
from site_tools.engine.program import shown_exception

_SESSIONS: dict[str, dict] = {}
_FORMATTING: list[str] = []  # blocks being formatted (markdown-exec renders Markdown inside)
_BLOCKS = count()


def formatting_a_block() -> bool:
    """Whether a block is being formatted: a Markdown rendering now is part of it
    (markdown-exec renders the block's source and output as Markdown), not a page."""
    return bool(_FORMATTING)


def reset_sessions() -> None:
    """Forget every session's names (called at the start of each page)."""
    _SESSIONS.clear()


def _expected_exception(name: str) -> type[BaseException]:
    exc = getattr(builtins, name, None)
    if exc is None:
        import torch  # torch's own errors, e.g. torch.OutOfMemoryError

        exc = getattr(torch, name, None)
    if not (isinstance(exc, type) and issubclass(exc, BaseException)):
        raise ValueError(f'raises="{name}" does not name an exception class')
    return exc


def _execute(code: str, session: str | None) -> str:
    """Run ``code`` in its session's namespace; return what it printed."""
    if session:
        namespace = _SESSIONS.setdefault(session, {"__name__": "__main__"})
    else:
        namespace = {"__name__": "__main__"}
    filename = f"<page block {next(_BLOCKS)}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, filename, "exec"), namespace)
    return printed.getvalue()


def _run_block(code: str, session: str | None, raises: str | None) -> str:
    """Run one block; return what it printed, or the message it must raise."""
    expected = _expected_exception(raises) if raises else None
    try:
        output = _execute(code, session)
    except Exception as error:
        if expected is not None and isinstance(error, expected):
            return shown_exception(error)
        trace = "".join(traceback.format_exception(error))
        raise ExecutionError(f"```text\n{trace}```") from error
    if expected is not None:
        raise ExecutionError(
            f"```text\nthe block was marked raises={raises!r} but ran without an "
            f"error\noutput was:\n{output}```"
        )
    return output


def _runner(raises: str | None):
    if raises:
        _expected_exception(raises)  # a name that is not an exception fails at once

    def run(code: str, session: str | None = None, **_: object) -> str:
        # Each block runs once: its output comes from the store when nothing that
        # determines it changed (site_tools/engine/store.py).
        try:
            return store.output_for(code, session, raises, _run_block)
        except store.PageError as error:
            raise ExecutionError(f"```text\n{error}\n```") from None

    return run


_OUTPUT_LANGS = ("text", "pycon", "console")


def _mark_boxes(rendered: str, raises: str | None, has_result: bool) -> str:
    """Mark the code box (``data-raises``) and the output box (``exec-output``): the
    ``<div class="language-… highlight">`` boxes of the block's HTML, found with
    BeautifulSoup (site_tools.engine.markup)."""
    if not raises and not has_result:
        return rendered
    page = Source(rendered, "div")
    boxes = [
        (div, classes(div)[0].removeprefix("language-"))
        for div in page.soup.find_all("div")
        if len(div.attrs) == 1
        and len(classes(div)) == 2
        and classes(div)[0].startswith("language-")
        and classes(div)[1] == "highlight"
    ]
    if raises:
        code = next((div for div, lang in boxes if lang == "python"), None)
        if code is not None:
            marked = f'<div class="language-python highlight" data-raises="{html.escape(raises)}">'
            page.replace(page.start(code), page.inner_start(code), marked)
    outputs = [(div, lang) for div, lang in boxes if lang in _OUTPUT_LANGS]
    if has_result and outputs:
        last, lang = outputs[-1]
        kind = "exec-output exec-error no-copy" if raises else "exec-output no-copy"
        page.replace(
            page.start(last),
            page.inner_start(last),
            f'<div class="language-{lang} highlight {kind}">',
        )
    return page.edited()


def formatter(source, language, css_class, options, md, **kwargs):
    raises = options.get("extra", {}).pop("raises", None)
    if raises and not options.get("result"):
        options["result"] = "text"
    _FORMATTING.append(source)
    try:
        rendered = base_format(
            language=language, run=_runner(raises), code=source, md=md, **options
        )
    finally:
        _FORMATTING.pop()
    return _mark_boxes(str(rendered), raises, bool(options.get("result")))
