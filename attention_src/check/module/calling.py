"""How a module is called: ``forward(x)``, ``forward(x, mask)`` (the mask
second or by a name such as ``attn_mask``), ``forward(q, k, v[, mask])`` (by
position, or keyword-only), and a ``context=`` keyword for cross-attention;
found by reading the signature and trying the calls it accepts."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch

from ...validate import shape_str
from ..lang import tr
from ..loader import UsageError, binds, signature
from ..running import call_quietly

__all__ = ["MASK_NAMES", "CONTEXT_NAMES", "CACHE_NAMES", "Call", "find_call"]

MASK_NAMES = (
    "mask", "attn_mask", "attention_mask", "causal_mask", "key_padding_mask",
    "padding_mask",
)  # fmt: skip
CONTEXT_NAMES = ("context", "memory", "encoder_out", "encoder_hidden_states")
# a second positional argument by one of these names is a cache, never a mask
CACHE_NAMES = (
    "layer_past", "past", "past_key_value", "past_key_values", "cache", "kv_cache",
)  # fmt: skip


@dataclass(frozen=True)
class Call:
    """How ``forward`` is called: ``inputs`` 1 (``x``) or 3 (``q, k, v``);
    the mask's keyword (``""``: positional after the inputs; ``None``: no
    mask argument), whether it has no default; the keyword, if any, that
    takes a second sequence (cross-attention)."""

    inputs: int = 1
    mask: str | None = None
    required: bool = False
    context: str | None = None
    keywords: tuple[str, ...] = ()  # q, k and v by these names, keyword-only

    def describe(self) -> str:
        names = "x" if self.inputs == 1 else "q, k, v"
        if self.keywords:
            names = ", ".join(f"{n}=..." for n in self.keywords)
        if self.mask == "":
            names += ", mask"
        elif self.mask:
            names += f", {self.mask}=mask"
        return f"forward({names})"

    def arguments(self, x, mask=None, context=None) -> tuple[list, dict]:
        kv = x if context is None else context
        args, kwargs = ([x, kv, kv] if self.inputs == 3 else [x]), {}
        if self.keywords:
            args, kwargs = [], dict(zip(self.keywords, [x, kv, kv], strict=True))
        if context is not None and self.inputs == 1:
            kwargs[self.context] = context
        if self.mask is not None and (mask is not None or self.required):
            if self.mask == "":
                args.append(mask)
            else:
                kwargs[self.mask] = mask
        return args, kwargs


def _candidates(forward) -> list[Call]:
    """The calls that ``forward``'s signature accepts, most likely first."""
    sig = signature(forward)
    if sig is None:
        return [Call(1, ""), Call(3, "")]
    params = sig.parameters
    named = [
        n
        for n, p in params.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    context = next((n for n in CONTEXT_NAMES if n in named), None)
    mask = next((n for n in MASK_NAMES if n in named), None)
    positional = [
        p
        for p in params.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    calls = []
    for inputs in (1, 3):
        dummy = [0] * inputs
        if mask is not None:
            required = params[mask].default is inspect.Parameter.empty
            if binds(sig, *dummy, **{mask: 0}) and (required or binds(sig, *dummy)):
                calls.append(Call(inputs, mask, required, context))
            continue
        slot = positional[inputs] if len(positional) > inputs else None
        usable = slot is not None and slot.name not in CONTEXT_NAMES + CACHE_NAMES
        usable = usable and not isinstance(slot.default, (bool, int, float))
        if usable and binds(sig, *dummy, 0):
            required = slot.default is inspect.Parameter.empty
            calls.append(Call(inputs, "", required, context))
        elif binds(sig, *dummy):
            calls.append(Call(inputs, None, False, context))
    for names in (("query", "key", "value"), ("q", "k", "v")):  # keyword-only
        if not calls and all(n in named for n in names):
            extra = {mask: 0} if mask else {}
            if binds(sig, **dict.fromkeys(names, 0), **extra):
                required = bool(mask) and params[mask].default is params[mask].empty
                calls.append(Call(3, mask, required, context, names))
    return calls


def find_call(model, x, name: str, limit) -> Call:
    """The first call that returns a tensor; if none does, the first the
    signature accepts (its error is then a finding)."""
    calls = _candidates(model.forward)
    if not calls:
        sig = signature(model.forward)
        raise UsageError(
            tr(
                "{name}.forward{sig} cannot be called as forward(x), "
                "forward(x, mask), forward(q, k, v) or forward(q, k, v, mask)",
                name=name,
                sig=sig,
            )
        )
    tried = []
    for call in calls:
        args, kwargs = call.arguments(x)
        what = tr(
            "{name}.{call} with x {shape}",
            name=name,
            call=call.describe(),
            shape=shape_str(x.shape),
        )
        result, error = call_quietly(model, args, kwargs, what=what, limit=limit)
        if isinstance(result, (tuple, list)) and result:
            result = result[0]
        if isinstance(result, torch.Tensor):
            return call
        tried.append(f"{call.describe()}: {error or type(result).__name__}")
    if all(t.split(": ", 1)[1].startswith("TypeError") for t in tried):
        raise UsageError(
            tr(
                "{name} could not be called; tried {tried}",
                name=name,
                tried="; ".join(tried),
            )
        )
    return calls[0]
