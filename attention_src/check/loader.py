"""Finding the reader's function or class, and checking that it can be called
the way the checker calls it. Anything wrong here is a usage error: a clear
one-line message, never a traceback from inside torch."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

import torch
from torch import nn

from .running import _guarded, _Timeout

__all__ = ["UsageError", "load_target"]

CONVENTIONS = ("allow", "block", "auto")


class UsageError(ValueError):
    """The target cannot be checked: file, name or signature not found, or
    an option that cannot be used. The command line prints its message as
    one line and exits with status 2."""


def _check_options(mask_convention, device) -> torch.device:
    """Validate the options shared by both checks; return the device."""
    if mask_convention not in CONVENTIONS:
        raise UsageError(
            f"mask_convention must be one of {', '.join(CONVENTIONS)}, got "
            f"{mask_convention!r}"
        )
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(device)
        torch.empty(0, device=device)
    except (RuntimeError, TypeError) as error:
        raise UsageError(f"device {device!r} cannot be used: {error}") from None
    return device


def _signature(obj):
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None  # a builtin without a signature: let the call decide


def _binds(sig, *args, **kwargs) -> bool:
    try:
        sig.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


def _accepts_is_causal(fn) -> bool:
    sig = _signature(fn)
    return sig is not None and "is_causal" in sig.parameters


def _check_function_signature(fn) -> None:
    """``fn`` must accept ``(q, k, v)`` and ``(q, k, v, mask)``."""
    if inspect.isclass(fn):
        raise UsageError(
            f"{fn.__name__} is a class: check a module with --module (check_module)"
        )
    sig = _signature(fn)
    if sig is not None and not (_binds(sig, 1, 2, 3) and _binds(sig, 1, 2, 3, 4)):
        name = getattr(fn, "__name__", "the function")
        raise UsageError(
            f"{name}{sig} cannot be called as {name}(q, k, v, mask=None)"
        )


def _check_module_signature(factory, d_model: int, num_heads: int) -> None:
    """``factory(d_model, num_heads)`` must be callable that way: an
    ``nn.Module`` class, or a function that builds one."""
    name = getattr(factory, "__name__", repr(factory))
    if inspect.isclass(factory) and not issubclass(factory, nn.Module):
        raise UsageError(
            f"{name} is a class, not an nn.Module subclass; check a function "
            "without --module (check_function)"
        )
    sig = _signature(factory)
    if sig is not None and not _binds(sig, d_model, num_heads):
        if not inspect.isclass(factory):
            raise UsageError(
                f"{name}{sig} is a function that cannot build an nn.Module as "
                f"{name}(d_model, num_heads); check a function without --module "
                "(check_function)"
            )
        raise UsageError(
            f"{name}{sig} cannot be called as {name}(d_model, num_heads); write "
            f"a one-line factory, def build(d_model, num_heads): return "
            f"{name}(...), and check FILE.py:build"
        )


def load_target(spec: str):
    """The object ``name`` of ``'path/to/file.py:name'``.

    This imports, and so runs, the file (its folder is put on ``sys.path``
    while it is imported, so that it can import its neighbours).

    Raises:
        UsageError: the spec is malformed, the file does not exist or cannot
            be imported, or it has no such name; the message is one line.
    """
    path_text, sep, name = spec.rpartition(":")
    if not sep or not path_text or not name:
        raise UsageError(
            f"expected FILE.py:NAME, for example my_attention.py:attention, "
            f"got {spec!r}"
        )
    path = Path(path_text)
    if not path.is_file():
        raise UsageError(f"file not found: {path_text}")
    if path.suffix != ".py":
        raise UsageError(f"not a Python file: {path_text}")
    module_name = f"_checked_{path.stem}_{abs(hash(str(path.resolve())))}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(loader_spec)
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)  # so that the file can import its neighbours
    sys.modules[module_name] = module
    try:
        with _guarded(f"importing {path_text}"):
            loader_spec.loader.exec_module(module)
    except _Timeout as error:
        sys.modules.pop(module_name, None)
        raise UsageError(f"could not import {path_text}: {error}") from None
    except (Exception, SystemExit) as error:  # a file may raise anything
        sys.modules.pop(module_name, None)
        line = _line_in(error, path)
        first = (str(error).strip().splitlines() or [""])[0]
        raise UsageError(
            f"could not import {path_text}{line}: {type(error).__name__}: {first}"
        ) from None
    finally:
        sys.path.remove(folder)
    if not hasattr(module, name):
        public = [n for n in vars(module) if not n.startswith("_")]
        callables = [n for n in public if callable(getattr(module, n))]
        hint = f"; it defines {', '.join(sorted(callables))}" if callables else ""
        raise UsageError(f"{path_text} has no name {name!r}{hint}")
    return getattr(module, name)


def _line_in(error: BaseException, path: Path) -> str:
    """' (line N)' for the last frame of ``error`` inside ``path``."""
    line = error.lineno if isinstance(error, SyntaxError) else None
    tb = error.__traceback__
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).resolve() == path.resolve():
            line = tb.tb_lineno
        tb = tb.tb_next
    return f" (line {line})" if line else ""
