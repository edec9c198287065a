"""Running a module on batch-first inputs, whatever its own layout, and
measuring by gradient what depends on what."""

from __future__ import annotations

import math

import torch

from ..checks import shape_str
from .loader import _mask_keyword
from .running import _call_quietly

__all__ = []  # internal: see attention_src.check

B, L = 2, 5  # the batch and the length the module is checked at


class _Probe:
    """Runs the module on batch-first inputs, whatever its layout."""

    def __init__(self, model, d_model, num_heads, seq_first, device):
        self.model, self.D, self.H = model, d_model, num_heads
        self.seq_first, self.device = seq_first, device
        self.keyword = _mask_keyword(model.forward)
        g = torch.Generator(device=device).manual_seed(0)
        self.x = torch.randn(B, L, d_model, generator=g, device=device)
        self.r = torch.Generator(device=device)

    def run(self, x, mask=None, *, seed=0, neutralize=True, recorder=None):
        """``(output (B, L, D), weights or None, error or None)``."""
        inp = x.transpose(0, 1) if self.seq_first else x
        kwargs, args = {}, [inp]
        if mask is not None:
            if self.keyword:
                kwargs["mask"] = mask
            else:
                args.append(mask)
        result, error = _call_quietly(
            self.model,
            args,
            kwargs,
            seed=seed,
            neutralize=neutralize,
            recorder=recorder,
        )
        if error is not None:
            return None, None, f"raises {error}"
        weights = None
        if isinstance(result, (tuple, list)) and result:
            result, *rest = result
            if rest and isinstance(rest[0], torch.Tensor):
                weights = rest[0]
        if not isinstance(result, torch.Tensor):
            kind = type(result).__name__
            return None, None, f"returns a {kind}, not a tensor"
        if self.seq_first and result.dim() == 3:
            result = result.transpose(0, 1)
        if result.shape != x.shape:
            return (
                None,
                None,
                (
                    f"returns shape {shape_str(result.shape)} for x "
                    f"{shape_str(inp.shape)}, expected {shape_str(inp.shape)}"
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

    def token_matrix(self, out, x) -> torch.Tensor | None:
        """(L, L) bool: output token i depends on input token j."""
        rows = [self.dependence(out[:, i], x, 1) for i in range(L)]
        if any(r is None for r in rows):
            return None
        dep = torch.stack(rows)
        return dep > 1e-6 * dep.clamp(max=1e30).max().clamp(min=1e-30)
