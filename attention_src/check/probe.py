"""Calling a module however it is written, on batch-first inputs, and
measuring by gradient what depends on what.

The checks are written once, for self-attention ``(B, L, D)`` and bool masks
``True`` = may attend. ``_Call`` finds how the module is called —
``forward(x)``, ``forward(x, mask)``, ``forward(q, k, v[, mask])``, a
``context=`` keyword for cross-attention — and ``_find_masks`` which mask
layouts and encodings it accepts; the probe then hands it every mask in its
own form."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

import torch

from ..checks import shape_str
from .lang import join, tr
from .loader import UsageError, _binds, _signature
from .running import _call_quietly

__all__ = []  # internal: see attention_src.check

B, L = 2, 5  # the batch and the length the module is checked at

MASK_NAMES = (
    "mask", "attn_mask", "attention_mask", "causal_mask", "key_padding_mask",
    "padding_mask",
)  # fmt: skip
CONTEXT_NAMES = ("context", "memory", "encoder_out", "encoder_hidden_states")
# a second positional argument by one of these names is a cache, never a mask
CACHE_NAMES = (
    "layer_past", "past", "past_key_value", "past_key_values", "cache", "kv_cache",
)  # fmt: skip
LAYOUTS = {
    "LS": "(L, S)",
    "B1LS": "(B, 1, L, S)",
    "BLS": "(B, L, S)",
    "BS": "(B, S) key padding",
    "lengths": "(B,) valid lengths",
}
ENCODINGS = {
    "allow": "bool, True = may attend",
    "block": "bool, True = blocked",
    "float": "float, added to the scores (0 or -inf)",
}


@dataclass(frozen=True)
class _Call:
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


def _candidates(forward) -> list[_Call]:
    """The calls that ``forward``'s signature accepts, most likely first."""
    sig = _signature(forward)
    if sig is None:
        return [_Call(1, ""), _Call(3, "")]
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
            if _binds(sig, *dummy, **{mask: 0}) and (
                required or _binds(sig, *dummy)
            ):
                calls.append(_Call(inputs, mask, required, context))
            continue
        slot = positional[inputs] if len(positional) > inputs else None
        usable = slot is not None and slot.name not in CONTEXT_NAMES + CACHE_NAMES
        usable = usable and not isinstance(slot.default, (bool, int, float))
        if usable and _binds(sig, *dummy, 0):
            required = slot.default is inspect.Parameter.empty
            calls.append(_Call(inputs, "", required, context))
        elif _binds(sig, *dummy):
            calls.append(_Call(inputs, None, False, context))
    for names in (("query", "key", "value"), ("q", "k", "v")):  # keyword-only
        if not calls and all(n in named for n in names):
            extra = {mask: 0} if mask else {}
            if _binds(sig, **dict.fromkeys(names, 0), **extra):
                required = bool(mask) and params[mask].default is params[mask].empty
                calls.append(_Call(3, mask, required, context, names))
    return calls


def _find_call(model, x, name: str, limit) -> _Call:
    """The first call that returns a tensor; if none does, the first the
    signature accepts (its error is then a finding)."""
    calls = _candidates(model.forward)
    if not calls:
        sig = _signature(model.forward)
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
        result, error = _call_quietly(model, args, kwargs, what=what, limit=limit)
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


def _encode(allow: torch.Tensor, layout: str, encoding: str):
    """``allow`` (bool, broadcastable to (B, 1, L, S)) in the module's form,
    or ``None`` where that layout cannot say it."""
    full = allow.expand(B, 1, allow.size(-2), allow.size(-1))
    if layout == "LS":
        if not (full == full[:1]).all():
            return None
        mask = full[0, 0]
    elif layout == "BLS":
        mask = full[:, 0]
    elif layout in ("BS", "lengths"):
        if not (full == full[:, :, :1]).all():
            return None
        mask = full[:, 0, 0]
        if layout == "lengths":  # the first n keys of each example
            n = mask.sum(dim=-1)
            prefix = torch.arange(mask.size(-1), device=mask.device) < n[:, None]
            return n if torch.equal(prefix, mask) else None
    else:
        mask = full
    if encoding == "block":
        return ~mask
    if encoding == "float":
        return torch.zeros(mask.shape, device=mask.device).masked_fill(
            ~mask, float("-inf")
        )
    return mask


@dataclass
class _Masks:
    """What the module accepts: its encoding and the layouts that gave
    outputs respecting the mask (none: it respected none, see ``found``)."""

    encoding: str
    layouts: list[str] = field(default_factory=list)
    found: bool = False

    def layout(self, uniform: bool, runs=()) -> str | None:
        """The layout to pass a mask in: one of the layouts found, else the
        first that ``runs`` (the layouts the module did not raise on)."""
        order = (
            ["LS", "B1LS", "BLS"] if uniform else ["B1LS", "BLS", "BS", "lengths"]
        )
        if self.found:
            return next((lay for lay in order if lay in self.layouts), None)
        if not (set(runs) & set(order)) and not (uniform and "BS" in runs):
            return order[0]  # it runs with none: the first, to see it raise
        return next((lay for lay in order if lay in runs), None)

    def describe(self) -> str:
        if self.layouts == ["lengths"]:
            return tr("masks as {layout}", layout=tr(LAYOUTS["lengths"]))
        shapes = join(tr(LAYOUTS[lay]) for lay in self.layouts if lay != "lengths")
        encoding = tr(ENCODINGS[self.encoding])
        return tr("masks {shapes}, {encoding}", shapes=shapes, encoding=encoding)


class _Probe:
    """Runs the module on batch-first inputs, whatever its layout."""

    def __init__(
        self, model, d_model, num_heads, seq_first, device, *, name, limit
    ):
        self.model, self.D, self.H = model, d_model, num_heads
        self.seq_first, self.device = seq_first, device
        self.name, self.limit = name, limit
        g = torch.Generator(device=device).manual_seed(0)
        self.x = torch.randn(B, L, d_model, generator=g, device=device)
        self.r = torch.Generator(device=device)
        self.call = _find_call(model, self._in(self.x), name, limit)
        self.masks, self.runs = _Masks("allow"), []
        self.causal = False  # found by _pattern_facts
        self.own_layout = False  # its mask raised with every layout offered

    def _in(self, x):
        return x.transpose(0, 1) if self.seq_first else x

    def run(
        self, x, mask=None, *, seed=0, neutralize=True, recorder=None, form=None,
        context=None,
    ):  # fmt: skip
        """``(output (B, L, D), weights or None, error or None)``. ``mask``
        is bool, True = may attend, (L, S) or (B, 1, L, S); ``form`` is the
        (layout, encoding) to hand it over in (default: the one found)."""
        inp = self._in(x)
        if mask is not None:
            layout, encoding = form or (
                self.masks.layout(
                    mask.dim() == 2 or bool((mask == mask[:1]).all()), self.runs
                ),
                self.masks.encoding,
            )
            mask = None if layout is None else _encode(mask, layout, encoding)
            if mask is None:
                masks = self.masks.describe()
                return (
                    None,
                    None,
                    tr("cannot take this mask as {masks}", masks=masks),
                )
        ctx = None if context is None else self._in(context)
        args, kwargs = self.call.arguments(inp, mask, ctx)
        call, shape = self.call.describe(), shape_str(inp.shape)
        what = tr(
            "{name}.{call} with x {shape}", name=self.name, call=call, shape=shape
        )
        if mask is not None:
            what = tr(
                "{name}.{call} with x {shape} and a mask {mask}",
                name=self.name,
                call=call,
                shape=shape,
                mask=shape_str(mask.shape),
            )
        result, error = _call_quietly(
            self.model,
            args,
            kwargs,
            seed=seed,
            neutralize=neutralize,
            recorder=recorder,
            what=what,
            limit=self.limit,
        )
        if error is not None:
            return None, None, tr("raises {error}", error=error)
        weights = None
        if isinstance(result, (tuple, list)) and result:
            result, *rest = result
            if rest and isinstance(rest[0], torch.Tensor):
                weights = rest[0]
        if not isinstance(result, torch.Tensor):
            kind = type(result).__name__
            return None, None, tr("returns a {kind}, not a tensor", kind=kind)
        if result.device != x.device or result.dtype != x.dtype:
            got, want = (str(t.dtype).removeprefix("torch.") for t in (result, x))
            return (
                None,
                None,
                tr(
                    "returns a {got} tensor on {device} for x {want} on {x_device}",
                    got=got,
                    device=result.device,
                    want=want,
                    x_device=x.device,
                ),
            )
        if self.seq_first and result.dim() == 3:
            result = result.transpose(0, 1)
        if result.shape != x.shape:
            return (
                None,
                None,
                tr(
                    "returns shape {got} for x {shape}, expected {shape}",
                    got=shape_str(result.shape),
                    shape=shape_str(inp.shape),
                ),
            )
        return result, weights, None

    def leaf(self, x=None):
        return (self.x if x is None else x).clone().requires_grad_(True)

    def grad_abs(self, target, wrt) -> torch.Tensor | None:
        """|d (target · noise) / d wrt|, NaN counted as infinite."""
        self.r.manual_seed(target.numel())
        noise = torch.randn(
            target.shape, generator=self.r, device=target.device
        ).to(target.dtype)
        try:
            (g,) = torch.autograd.grad(
                (target * noise).sum(), wrt, retain_graph=True, allow_unused=True
            )
        except RuntimeError:
            return None
        if g is None:
            return torch.zeros_like(wrt)
        return g.detach().abs().nan_to_num(nan=math.inf)

    def dependence(self, target, wrt, axis) -> torch.Tensor | None:
        """Per index along ``axis`` of ``wrt``: how much ``target`` depends on
        it (by gradient; NaN counts as dependence)."""
        g = self.grad_abs(target, wrt)
        if g is None:
            return None
        g = g.movedim(axis, 0)
        return g.reshape(g.size(0), -1).sum(dim=1)

    def token_matrix(self, out, x, per_example=False) -> torch.Tensor | None:
        """(L, L) bool: output token i depends on input token j; with
        ``per_example``, (B, L, L), each example's own."""
        rows = []
        for i in range(L):
            g = self.grad_abs(out[:, i], x)
            if g is None:
                return None
            rows.append(g.sum(dim=-1) if per_example else g.sum(dim=(0, 2)))
        dep = torch.stack(rows, dim=-2)  # (L, L) or (B, L, L)
        return dep > 1e-6 * dep.clamp(max=1e30).max().clamp(min=1e-30)


def _band(device) -> torch.Tensor:
    """(B, 1, L, L): example 0 may attend to tokens i-1 and i, example 1 to
    tokens i and i+1 — a mask that tells every layout and encoding apart,
    for causal modules too."""
    i = torch.arange(L, device=device)
    d = i[None, :] - i[:, None]  # j - i
    return torch.stack([(d == -1) | (d == 0), (d == 0) | (d == 1)])[:, None]


def _find_masks(probe: _Probe, encodings: list[str]) -> tuple[_Masks, list[str]]:
    """The encoding and layouts of masks the module respects (no output
    depends on a blocked token), and the layouts it runs with at all."""
    if probe.call.mask is None:
        return _Masks(encodings[0]), []
    band = _band(probe.device)
    real = torch.arange(L, device=probe.device) < torch.tensor(
        [[L], [3]], device=probe.device
    )
    pad = real[:, None, None, :]  # (B, 1, 1, L): keys of example 1 end at 3
    tests = {"LS": band[:1], "B1LS": band, "BLS": band, "BS": pad, "lengths": pad}
    runs, found = [], {}
    for encoding in encodings:
        for layout, allow in tests.items():
            x = probe.leaf()
            out, _, error = probe.run(x, allow, form=(layout, encoding))
            if error is not None:
                continue
            if layout not in runs:
                runs.append(layout)
            dep = probe.token_matrix(out, x, per_example=True)
            eye = torch.eye(L, dtype=torch.bool, device=probe.device)
            allowed = allow.expand(B, 1, L, L)[:, 0] | eye  # a query is its token
            if dep is not None and not (dep & ~allowed).any() and dep.any(-1).all():
                found.setdefault(encoding, []).append(layout)
        if found.get(encoding):
            return _Masks(encoding, found[encoding], True), runs
    return _Masks(encodings[0]), runs
