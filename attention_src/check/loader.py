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

from .lang import UsageError, tr
from .running import Timeout, guarded

# UsageError and load_target are public (attention_src.check); the rest are the
# options and signature checks that every check shares
__all__ = [
    "UsageError",
    "load_target",
    "CONVENTIONS",
    "check_options",
    "blocked_under_auto",
    "signature",
    "binds",
    "accepts_is_causal",
    "check_function_signature",
    "check_module_signature",
]

CONVENTIONS = ("allow", "block", "auto")


def check_options(mask_convention, device) -> torch.device:
    """Validate the options shared by both checks; return the device."""
    if mask_convention not in CONVENTIONS:
        raise UsageError(
            tr(
                "mask_convention must be one of {choices}, got {value!r}",
                choices=", ".join(CONVENTIONS),
                value=mask_convention,
            )
        )
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(device)
        torch.empty(0, device=device)
    except (RuntimeError, TypeError) as error:
        message = tr(
            "device {device!r} cannot be used: {error}", device=device, error=error
        )
        raise UsageError(message) from None
    return device


def blocked_under_auto() -> str:
    """The note of a check under ``--mask-convention auto`` that read the
    masks as True = blocked because that is how the code reads them: said so,
    with the flag that makes it a finding where the code means the other."""
    return tr(
        "an inverted mask is taken as the other convention under auto: your "
        "code reads True as blocked, the opposite of "
        "F.scaled_dot_product_attention; if it means True = may attend, "
        "--mask-convention allow reports it as mask-inverted"
    )


def signature(obj):
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None  # a builtin without a signature: let the call decide


def binds(sig, *args, **kwargs) -> bool:
    try:
        sig.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


def accepts_is_causal(fn) -> bool:
    sig = signature(fn)
    return sig is not None and "is_causal" in sig.parameters


def check_function_signature(fn) -> None:
    """``fn`` must accept ``(q, k, v)`` and ``(q, k, v, mask)``."""
    if inspect.isclass(fn):
        raise UsageError(
            tr(
                "{name} is a class: check a module with --module (check_module)",
                name=fn.__name__,
            )
        )
    sig = signature(fn)
    if sig is not None and not (binds(sig, 1, 2, 3) and binds(sig, 1, 2, 3, 4)):
        name = getattr(fn, "__name__", "the function")
        raise UsageError(
            tr(
                "{name}{sig} cannot be called as {name}(q, k, v, mask=None)",
                name=name,
                sig=sig,
            )
        )


def check_module_signature(factory, d_model: int, num_heads: int) -> None:
    """``factory(d_model, num_heads)`` must be callable that way: an
    ``nn.Module`` class, or a function that builds one."""
    name = getattr(factory, "__name__", repr(factory))
    if inspect.isclass(factory) and not issubclass(factory, nn.Module):
        raise UsageError(
            tr(
                "{name} is a class, not an nn.Module subclass; check a function "
                "without --module (check_function)",
                name=name,
            )
        )
    sig = signature(factory)
    if sig is not None and not binds(sig, d_model, num_heads):
        if not inspect.isclass(factory):
            raise UsageError(
                tr(
                    "{name}{sig} is a function that cannot build an nn.Module as "
                    "{name}(d_model, num_heads); check a function without --module "
                    "(check_function)",
                    name=name,
                    sig=sig,
                )
            )
        raise UsageError(
            tr(
                "{name}{sig} cannot be called as {name}(d_model, num_heads); write "
                "a one-line factory, def build(d_model, num_heads): return "
                "{name}(...), and check FILE.py:build",
                name=name,
                sig=sig,
            )
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
            tr(
                "expected FILE.py:NAME, for example my_attention.py:attention, got "
                "{spec!r}",
                spec=spec,
            )
        )
    path = Path(path_text)
    if not path.is_file():
        raise UsageError(tr("file not found: {path}", path=path_text))
    if path.suffix != ".py":
        raise UsageError(tr("not a Python file: {path}", path=path_text))
    module_name = f"_checked_{path.stem}_{abs(hash(str(path.resolve())))}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(loader_spec)
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)  # so that the file can import its neighbours
    sys.modules[module_name] = module
    try:
        with guarded(tr("importing {path}", path=path_text)):
            loader_spec.loader.exec_module(module)
    except Timeout as error:
        sys.modules.pop(module_name, None)
        message = tr(
            "could not import {path}: {error}", path=path_text, error=error
        )
        raise UsageError(message) from None
    except (Exception, SystemExit) as error:  # a file may raise anything
        sys.modules.pop(module_name, None)
        line = _line_in(error, path)
        first = (str(error).strip().splitlines() or [""])[0]
        raise UsageError(
            tr(
                "could not import {path}{line}: {error}: {first}",
                path=path_text,
                line=line,
                error=type(error).__name__,
                first=first,
            )
        ) from None
    finally:
        sys.path.remove(folder)
    if not hasattr(module, name):
        public = [n for n in vars(module) if not n.startswith("_")]
        callables = [n for n in public if callable(getattr(module, n))]
        hint = (
            tr("; it defines {names}", names=", ".join(sorted(callables)))
            if callables
            else ""
        )
        raise UsageError(
            tr(
                "{path} has no name {name!r}{hint}",
                path=path_text,
                name=name,
                hint=hint,
            )
        )
    return getattr(module, name)


def _line_in(error: BaseException, path: Path) -> str:
    """' (line N)' for the last frame of ``error`` inside ``path``."""
    line = error.lineno if isinstance(error, SyntaxError) else None
    tb = error.__traceback__
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).resolve() == path.resolve():
            line = tb.tb_lineno
        tb = tb.tb_next
    return tr(" (line {line})", line=line) if line else ""
