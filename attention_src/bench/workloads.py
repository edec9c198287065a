"""What the benchmark runs: seeded inputs, the attention implementations it
compares and the flops they do."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from ..efficient import tiled_attention
from ..masks import causal_mask
from ..scaled_dot_product import scaled_dot_product_attention
from .settings import Settings

__all__ = ["ATTENTION_IMPLS", "attention_flops"]


def attention_flops(
    B: int, H: int, L: int, S: int, D: int, causal: bool = False
) -> int:
    """Multiply-adds of ``Q K^T`` and ``P V``, counted as 2 flops each: 4 B H L S D.

    Causal attention only computes the pairs a query may see, so it counts
    those: ``j <= i + (S - L)``.
    """
    if not causal:
        return 4 * B * H * L * S * D
    pairs = sum(min(S, max(0, i + 1 + S - L)) for i in range(L))
    return 4 * B * H * pairs * D


def _dtype(settings: Settings) -> torch.dtype:
    dtype = getattr(torch, settings.dtype, None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(
            f"dtype must name a floating torch dtype, got {settings.dtype!r}"
        )
    return dtype


def _qkv(settings: Settings, L: int, S: int | None = None):
    S = L if S is None else S
    g = torch.Generator(device=settings.device).manual_seed(settings.seed)
    B, H, Dh = settings.batch, settings.heads, settings.head_dim
    kw = {"generator": g, "device": settings.device, "dtype": _dtype(settings)}
    return (
        torch.randn(B, H, L, Dh, **kw),
        torch.randn(B, H, S, Dh, **kw),
        torch.randn(B, H, S, Dh, **kw),
    )


def _attention_fns(q, k, v, causal: bool) -> dict[str, Callable[[], torch.Tensor]]:
    L, S = q.size(-2), k.size(-2)
    # built once, not timed
    mask = causal_mask(L, S, device=q.device) if causal else None
    # F.scaled_dot_product_attention's is_causal is top-left aligned:
    # explicit mask if L != S
    sdpa_mask = mask if causal and L != S else None
    return {
        "naive": lambda: scaled_dot_product_attention(q, k, v, mask)[0],
        "tiled": lambda: tiled_attention(q, k, v, causal=causal),
        "sdpa": lambda: F.scaled_dot_product_attention(
            q, k, v, attn_mask=sdpa_mask, is_causal=causal and sdpa_mask is None
        ),
    }


ATTENTION_IMPLS = {
    "naive": "attention_src.scaled_dot_product_attention: the full (L, S) weights",
    "tiled": (
        "attention_src.tiled_attention: online softmax over tiles, plain PyTorch"
    ),
    "sdpa": (
        "torch.nn.functional.scaled_dot_product_attention: PyTorch's fused kernel"
    ),
}


def _matmul_fn(settings: Settings) -> Callable[[], torch.Tensor]:
    n = settings.matmul_n
    g = torch.Generator(device=settings.device).manual_seed(settings.seed)
    kw = {"generator": g, "device": settings.device, "dtype": _dtype(settings)}
    a, b = torch.randn(n, n, **kw), torch.randn(n, n, **kw)
    return lambda: a @ b
