"""Known wrong variants of the attention computation.

A variant is one choice on each of six independent axes: how the key is
transposed, how the scores are scaled, which dimension the softmax runs over,
what is done with the mask, what a fully masked row gets, and how a causal
triangle is aligned. The choice ``"right"`` on every axis is exactly
``F.scaled_dot_product_attention``; every other choice is a mistake seen in
real code, written out here so that the checker can say "your output equals
this computation" instead of guessing.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..lang import join, tr

__all__ = [
    "AXES", "KEY_TRANSPOSES", "Combo", "all_combos", "relevant_choices", "predict",
    "matches", "fit_scale",
]  # fmt: skip

# the first value on each axis is the right one
AXES: dict[str, tuple] = {
    "kt": ("right", "t12", "t01", "T", "reshape", "none"),
    "scale": ("right", "none"),  # a fitted scale is a float, see predict()
    "dim": (-1, -2, 1),
    "mask": ("right", "inverted", "ignored", "after"),
    "fill": ("zero", "nan", "uniform"),
    "causal": ("bottom-right", "top-left", "ignored"),
}

KEY_TRANSPOSES = {
    "right": "k.transpose(-2, -1)",
    "t12": "k.transpose(1, 2)",
    "t01": "k.transpose(0, 1)",
    "T": "k.T (all axes reversed)",
    "reshape": "k.reshape(..., Dk, S) (a reshape, not a transpose)",
    "none": "k itself (no transpose)",
}


@dataclass(frozen=True)
class Combo:
    """One choice per axis; ``scale`` may also be ``"fit"`` (a fitted
    factor, one per input)."""

    kt: str = "right"
    scale: str = "right"
    dim: int = -1
    mask: str = "right"
    fill: str = "zero"
    causal: str = "bottom-right"

    def deviations(self) -> list[str]:
        """The axes on which this combination is not the right one."""
        right = Combo()
        return [a for a in AXES if getattr(self, a) != getattr(right, a)]

    def fixed(self, axis: str) -> Combo:
        """The same combination with ``axis`` set right."""
        values = {a: getattr(self, a) for a in AXES}
        values[axis] = getattr(Combo(), axis)
        return Combo(**values)

    def describe(self) -> str:
        parts = []
        if self.kt != "right":
            how = tr(KEY_TRANSPOSES[self.kt])
            parts.append(tr("key transposed as {how}", how=how))
        if self.scale == "none":
            parts.append(tr("no scale"))
        elif self.scale == "fit":
            parts.append(tr("another scale"))
        if self.dim != -1:
            parts.append(tr("softmax over dim={dim}", dim=self.dim))
        if self.mask != "right":
            parts.append(
                {
                    "inverted": tr("the mask inverted"),
                    "ignored": tr("no mask"),
                    "after": tr("the mask applied after the softmax"),
                }[self.mask]
            )
        if self.fill != "zero":
            parts.append(
                tr("NaN for fully masked rows")
                if self.fill == "nan"
                else tr("a finite fill (uniform fully masked rows)")
            )
        if self.causal != "bottom-right":
            parts.append(
                tr("a top-left causal triangle")
                if self.causal == "top-left"
                else tr("no causal mask")
            )
        return join(parts) if parts else tr("nothing changed")


def all_combos() -> list[Combo]:
    """Every combination of the discrete axes, the right one first."""
    return [Combo(*values) for values in itertools.product(*AXES.values())]


def relevant_choices(combo: Combo, *, masked: bool, causal: bool) -> tuple:
    """The part of ``combo`` that can change the result for an input with
    (or without) a mask or ``is_causal``: two combinations with the same
    key here give the same output, so each is computed once."""
    key = [combo.kt, combo.scale, combo.dim]
    if masked:
        key.append(combo.mask)
        if combo.mask in ("right", "inverted"):
            key.append(combo.fill)
    if causal:
        key.append(combo.causal)
    return tuple(key)


def _transpose_key(k: torch.Tensor, how: str) -> torch.Tensor:
    if how == "right":
        return k.transpose(-2, -1)
    if how == "t12":
        return k.transpose(1, 2)
    if how == "t01":
        return k.transpose(0, 1)
    if how == "T":
        return k.permute(*reversed(range(k.dim())))
    if how == "reshape":
        return k.reshape(*k.shape[:-2], k.size(-1), k.size(-2))
    return k  # "none"


def _effective_mask(
    combo: Combo,
    allow: torch.Tensor | None,
    is_causal: bool,
    L: int,
    S: int,
    device,
) -> torch.Tensor | None:
    """The True = may-attend mask that the variant actually applies."""
    if is_causal:
        if combo.causal == "ignored":
            return None
        ones = torch.ones(L, S, dtype=torch.bool, device=device)
        shift = S - L if combo.causal == "bottom-right" else 0
        return ones.tril(diagonal=shift)
    if allow is None or combo.mask == "ignored":
        return None
    return ~allow if combo.mask == "inverted" else allow


def predict(
    combo: Combo,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    allow: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
) -> torch.Tensor:
    """The output of the variant ``combo`` in float32; raises where that
    computation would raise. ``scale`` is the factor when
    ``combo.scale == "fit"``. ``allow`` is the intended mask (True = may
    attend)."""
    q, k, v = q.float(), k.float(), v.float()
    L, S = q.size(-2), k.size(-2)
    mask = _effective_mask(combo, allow, is_causal, L, S, q.device)
    if combo.scale == "right":
        factor = 1.0 / math.sqrt(q.size(-1))
    elif combo.scale == "none":
        factor = 1.0
    else:
        factor = float(scale)
    sdpa_like = combo.kt == "right" and combo.dim == -1
    sdpa_like = sdpa_like and combo.mask != "after" and combo.fill == "zero"
    if sdpa_like:  # what PyTorch itself computes, with these choices
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=factor)
        if mask is not None:  # zeros where nothing is allowed, on any device
            out = torch.where(mask.any(dim=-1, keepdim=True), out, 0.0)
        return out
    scores = (q @ _transpose_key(k, combo.kt)) * factor
    if mask is not None and combo.mask != "after":
        fill = -1e9 if combo.fill == "uniform" else float("-inf")
        scores = scores.masked_fill(~mask, fill)
    weights = torch.softmax(scores, dim=combo.dim)
    if combo.fill == "zero":
        weights = torch.where(torch.isnan(weights), 0.0, weights)
    if mask is not None and combo.mask == "after":
        weights = weights * mask
    return weights @ v


def matches(observed: torch.Tensor, predicted: torch.Tensor, tol: float) -> bool:
    """Same shape and the same numbers within ``tol`` (NaN where NaN)."""
    if observed.shape != predicted.shape:
        return False
    return torch.allclose(
        observed.float(), predicted, rtol=tol, atol=tol, equal_nan=True
    )


def fit_scale(
    combo: Combo, observed: torch.Tensor, inputs: tuple, tol: float
) -> float | None:
    """The factor ``s`` for which the variant ``combo`` (with scale ``s``)
    reproduces ``observed``, or ``None`` if no factor does."""

    def error(log_s: float) -> float:
        try:
            predicted = predict(combo, *inputs, scale=math.exp(log_s))
        except RuntimeError:
            return math.inf
        if predicted.shape != observed.shape:
            return math.inf
        diff = (observed.float() - predicted).abs().nan_to_num(nan=1e9)
        return float(diff.max())

    grid = [math.log(10.0) * (i / 5.0) for i in range(-15, 16)]  # 1e-3..1e3
    errors = [error(x) for x in grid]
    best = min(range(len(grid)), key=errors.__getitem__)
    if not math.isfinite(errors[best]):
        return None
    lo = grid[max(best - 1, 0)]
    hi = grid[min(best + 1, len(grid) - 1)]
    golden = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - golden * (hi - lo), lo + golden * (hi - lo)
    fa, fb = error(a), error(b)
    for _ in range(30):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - golden * (hi - lo)
            fa = error(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + golden * (hi - lo)
            fb = error(b)
    s = math.exp((lo + hi) / 2.0)
    predicted = predict(combo, *inputs, scale=s)
    return s if matches(observed, predicted, tol) else None
