"""Calling a decoding adapter ``decode(tokens, cache) -> (out, cache)``: one
call, checked and time-limited (``call_adapter``), a prefill followed by
one-token steps (``stepwise``), the full recompute of a sequence, and the
size of a cache in tensor elements."""

from __future__ import annotations

import torch

from ...validate import shape_str
from ..lang import tr
from ..running import call_quietly

__all__ = [
    "B", "VOCAB", "ATOL", "RTOL", "AdapterError", "call_adapter", "elements",
    "stepwise", "recompute", "close",
]  # fmt: skip

B, VOCAB = 2, 10  # the batch and the token ids (each below VOCAB) it decodes
ATOL, RTOL = 1e-4, 1e-3


class AdapterError(Exception):
    """A call of the adapter raised or returned something unusable."""


def call_adapter(fn, tokens, cache, what, limit=None):
    """``(out (B, T, ...) as float, cache)`` of ``fn(tokens, cache)``; raises
    ``AdapterError`` naming ``what`` when the call raises or returns
    something else."""
    result, error = call_quietly(
        fn, [tokens, cache], what=tr("{what} of decode", what=what), limit=limit
    )
    if error is not None:
        raise AdapterError(tr("{what} raises {error}", what=what, error=error))
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise AdapterError(
            tr(
                "{what} returned {type}, not (out, cache)",
                what=what,
                type=type(result).__name__,
            )
        )
    out, cache = result
    if not isinstance(out, torch.Tensor) or out.shape[:2] != tokens.shape:
        got = shape_str(out.shape) if isinstance(out, torch.Tensor) else out
        raise AdapterError(
            tr(
                "{what} returned out {got} for tokens {shape}, "
                "expected (B, T, ...)",
                what=what,
                got=got,
                shape=shape_str(tokens.shape),
            )
        )
    return out.detach().float(), cache


def elements(obj, seen=None, depth=0) -> int:
    """How many tensor elements are reachable from ``obj``."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 8 or isinstance(obj, (str, bytes, type)):
        return 0
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        return obj.numel()
    if isinstance(obj, dict):
        items = obj.values()
    elif isinstance(obj, (list, tuple, set)):
        items = obj
    elif hasattr(obj, "__dict__") and not isinstance(obj, torch.nn.Module):
        items = vars(obj).values()
    else:
        return 0
    return sum(elements(x, seen, depth + 1) for x in items)


def stepwise(fn, tokens, prefill: int, stop: int):
    """Outputs ``{t: (B, ...)}`` of one-token steps ``prefill .. stop - 1``
    after reading ``tokens[:, :prefill]``, and the cache sizes after each;
    ``fn`` is ``call_adapter`` bound to the adapter."""
    _, cache = fn(tokens[:, :prefill], None, tr("the prefill of {n}", n=prefill))
    outs, sizes = {}, {prefill - 1: elements(cache)}
    for t in range(prefill, stop):
        out, cache = fn(tokens[:, t : t + 1], cache, tr("step {t}", t=t))
        outs[t], sizes[t] = out[:, -1], elements(cache)
    return outs, sizes


def recompute(fn, tokens) -> torch.Tensor:
    """The output for the last of ``tokens``, all read with ``cache=None``."""
    what = tr("the full recompute of {n}", n=tokens.size(1))
    return fn(tokens, None, what)[0][:, -1]


def close(a, b) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, atol=ATOL, rtol=RTOL))
