"""The languages the checker speaks: English (the default) and Simplified Chinese.

The English text stays where it is used, as a template:
``tr("seen on {first}", first=...)``. ``zh.MESSAGES`` maps each English
template to its Chinese one, and ``zh.FINDINGS`` gives each finding's meaning
and fix. A check runs in one language (``lang=`` of ``check_function`` and the
others; ``--lang`` or ``ATTENTION_CHECK_LANG`` on the command line), never the
locale's, so that the output never depends on who runs it. Whatever the
language, the machine-read parts stay the same: the ``FINDING <id>:`` prefix,
the finding ids, the JSON keys and the exit status.
"""

from __future__ import annotations

import contextlib
import contextvars
import string
from collections.abc import Callable, Iterable, Mapping

from . import zh

__all__ = ["UsageError", "use", "current", "language", "tr", "join", "tagged"]

LANGS = ("en", "zh")
ENV = "ATTENTION_CHECK_LANG"  # the command line's language when --lang is not given

_CURRENT = contextvars.ContextVar("attention_check_lang", default="en")
_SEPARATORS = {"zh": {", ": "、", "; ": "；"}}
_FORMATTER = string.Formatter()


class UsageError(ValueError):
    """The target cannot be checked: file, name or signature not found, or
    an option that cannot be used. The command line prints its message as
    one line and exits with status 2. (Defined here, where the language is chosen,
    so that choosing one can fail with it; :mod:`.loader` exports it.)"""


def current() -> str:
    """The language of the check that is running ("en" outside any)."""
    return _CURRENT.get()


@contextlib.contextmanager
def use(lang: str):
    """Speak ``lang`` inside the ``with`` block."""
    if lang not in LANGS:
        raise UsageError(f"lang must be one of {', '.join(LANGS)}, got {lang!r}")
    token = _CURRENT.set(lang)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def language(given: str | None, environ: Mapping[str, str]) -> str:
    """The command line's language: ``--lang`` if given, else
    ``ATTENTION_CHECK_LANG`` (empty counts as unset), else English. Raises
    ``ValueError`` for an unknown one."""
    if given is not None:
        if given not in LANGS:
            raise ValueError(f"--lang must be en or zh, got {given!r}")
        return given
    value = environ.get(ENV, "")
    if value and value not in LANGS:
        raise ValueError(f"{ENV} must be en or zh, got {value!r}")
    return value or "en"


def tr(text: str, /, **values) -> str:
    """The English template ``text`` in the current language, filled with
    ``values`` (``str.format`` fields: ``{name}``, ``{x:.3g}``, ``{x!r}``). In
    Chinese a space goes where a filled-in value meets a Chinese character, as
    the style rules want (``见于{first}`` gives ``见于 q (2, 5, 8)``); the values
    themselves are never changed."""
    if current() == "en":
        return text.format(**values) if values else text
    template = zh.MESSAGES.get(text, text)
    if not values:
        return template
    out, after_value = "", False
    for literal, name, spec, conversion in _FORMATTER.parse(template):
        pieces = [(literal, False)]
        if name is not None:
            value = _FORMATTER.convert_field(values[name], conversion)
            pieces.append((format(value, spec), True))
        for piece, filled in pieces:
            if (
                out
                and piece
                and (filled or after_value)
                and _apart(out[-1], piece[0])
            ):
                out += " "
            out += piece
            after_value = filled or (after_value and not piece)
    return out


def join(parts: Iterable[str], separator: str = ", ") -> str:
    """``separator.join(parts)``, with the current language's separator (Chinese
    lists with 、 and ；)."""
    return _SEPARATORS.get(current(), {}).get(separator, separator).join(parts)


def tagged(make: Callable[[], str]) -> str:
    """``make()`` in the current language; in Chinese followed by the English in
    parentheses, for a phrase that scripts (and the site's pages) look for."""
    text = make()
    if current() == "en":
        return text
    with use("en"):
        english = make()
    return f"{text}（{english}）"


def _han(c: str) -> bool:
    return (
        "\u3400" <= c <= "\u4dbf"
        or "\u4e00" <= c <= "\u9fff"
        or "\uf900" <= c <= "\ufaff"
    )


def _apart(a: str, b: str) -> bool:
    """Whether a space goes between ``a`` and ``b``: a Chinese character and Latin
    text (letters, digits, brackets, code), in either order."""

    def latin(c: str) -> bool:
        return (
            c.isascii() and c.isprintable() and not c.isspace() and c not in ",;:!?"
        )

    return (_han(a) and latin(b)) or (latin(a) and _han(b))
