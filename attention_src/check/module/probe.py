"""Calling a module however it is written, on batch-first inputs, and
measuring by gradient what depends on what.

The checks are written once, for self-attention ``(B, L, D)`` and bool masks
``True`` = may attend. ``calling`` finds how the module is called and
``masks`` which mask layouts and encodings it accepts; the probe then hands it
every input in its own layout and every mask in its own form."""

from __future__ import annotations

import math

import torch

from ...validate import shape_str
from ..lang import tr
from ..running import call_quietly
from .calling import find_call
from .facts import B, L
from .masks import MaskForm, encode

__all__ = ["Probe", "nonzero"]


def nonzero(dep) -> list[int]:
    """The indices where ``dep`` (a dependence, by gradient) is not zero:
    above a millionth of its largest value."""
    top = float(dep.clamp(max=1e30).max())
    return [j for j, d in enumerate(dep.tolist()) if d > 1e-6 * max(top, 1e-30)]


class Probe:
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
        self.call = find_call(model, self.handed(self.x), name, limit)
        self.masks, self.runs = MaskForm("allow"), []
        self.causal = False  # found by behaviour.pattern_facts
        self.own_layout = False  # its mask raised with every layout offered

    def handed(self, x):
        """``x`` (batch-first) in the layout the module takes."""
        return x.transpose(0, 1) if self.seq_first else x

    def run(
        self, x, mask=None, *, seed=0, neutralize=True, recorder=None, form=None,
        context=None,
    ):  # fmt: skip
        """``(output (B, L, D), weights or None, error or None)``. ``mask``
        is bool, True = may attend, (L, S) or (B, 1, L, S); ``form`` is the
        (layout, encoding) to hand it over in (default: the one found)."""
        inp = self.handed(x)
        if mask is not None:
            layout, encoding = form or (
                self.masks.layout(
                    mask.dim() == 2 or bool((mask == mask[:1]).all()), self.runs
                ),
                self.masks.encoding,
            )
            mask = None if layout is None else encode(mask, layout, encoding)
            if mask is None:
                masks = self.masks.describe()
                return (
                    None,
                    None,
                    tr("cannot take this mask as {masks}", masks=masks),
                )
        ctx = None if context is None else self.handed(context)
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
        result, error = call_quietly(
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
