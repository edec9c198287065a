"""A markdown-exec Python fence that can also show a failure live.

    ```python exec="on" source="above" session="page" raises="ValueError"
    MultiHeadAttention(d_model=10, num_heads=3)
    ```

runs the block during the build and shows the *real* exception it raised,
``ValueError: ...``, under the code. If the block raises something else, or
nothing, the build warns (and ``mkdocs build --strict`` fails), so a page can
never claim an error that the code no longer makes. The doc tests read the same
``raises=`` attribute and check it too.
"""

from __future__ import annotations

import builtins
import traceback

from markdown_exec import formatter as exec_formatter
from markdown_exec import validator  # noqa: F401  (re-exported for mkdocs.yml)
from markdown_exec._internal.formatters.base import ExecutionError, base_format
from markdown_exec._internal.formatters.python import _run_python


def _expected_exception(name: str) -> type[BaseException]:
    exc = getattr(builtins, name, None)
    if exc is None:
        import torch  # torch's own errors, e.g. torch.OutOfMemoryError

        exc = getattr(torch, name, None)
    if not (isinstance(exc, type) and issubclass(exc, BaseException)):
        raise ValueError(f'raises="{name}" does not name an exception class')
    return exc


def _run_expecting(raises: str):
    expected = _expected_exception(raises)

    def run(code: str, **kwargs) -> str:
        try:
            output = _run_python(code, **kwargs)
        except ExecutionError as error:
            cause = error.__cause__
            if isinstance(cause, expected):
                message = "".join(traceback.format_exception_only(type(cause), cause))
                return message
            raise
        raise ExecutionError(
            f"```text\nthe block was marked raises={raises!r} but ran without an error\n"
            f"output was:\n{output}```"
        )

    return run


def formatter(source, language, css_class, options, md, **kwargs):
    raises = options.get("extra", {}).pop("raises", None)
    if language != "python" or raises is None:
        return exec_formatter(source, language, css_class, options, md, **kwargs)
    if not options.get("result"):
        options["result"] = "text"
    return base_format(language="python", run=_run_expecting(raises), code=source, md=md, **options)
