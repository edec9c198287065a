"""Grouped-query attention (GQA; Ainslie et al., 2023) and multi-query
attention (MQA; Shazeer, 2019).

``H`` query heads share ``G`` key/value heads: query head ``h`` reads key/value
head ``h // (H / G)``. ``G = H`` is ordinary multi-head attention, ``G = 1`` is
multi-query attention, anything between is grouped. Fewer key/value heads mean
smaller K and V projections and a KV cache ``H / G`` times smaller.

``GroupedQueryAttention`` is the attention layer of Llama-style decoders:
projections named ``q_proj``, ``k_proj``, ``v_proj``, ``o_proj`` (no bias), RoPE
on queries and keys, and a KV cache for decoding. The mask and the rotation
angles are the model's decisions, handed to the layer (as transformers' Llama
hands ``attention_mask`` and ``position_embeddings`` to every layer).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .kv_cache import KVCache
from .rope import rope_rotate
from .softmax import softmax
from .validate import (
    check_floating,
    check_mask,
    check_ndim,
    check_positive_int,
    check_same_dtype_device,
    shape_str,
)

__all__ = ["repeat_kv", "grouped_query_attention", "GroupedQueryAttention"]


# --8<-- [start:repeat_kv]
def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """``(B, G, S, Dh) -> (B, G * n_rep, S, Dh)``: each key/value head repeated
    ``n_rep`` times in a row, so that head ``h`` of the result is head
    ``h // n_rep`` of ``x``.

    This copies; ``grouped_query_attention`` gets the same result without
    the copy.
    """
    check_floating("x", x)
    check_ndim("x", x, 4, "(B, G, S, Dh)")
    check_positive_int("n_rep", n_rep)
    B, G, S, Dh = x.shape
    x = x[:, :, None].expand(B, G, n_rep, S, Dh)  # (B, G, n_rep, S, Dh), a view
    return x.reshape(B, G * n_rep, S, Dh)  # (B, H, S, Dh), a copy


# --8<-- [end:repeat_kv]


def _check_gqa(q, k, v) -> tuple[int, int]:
    """Check the shapes; return ``(H, G)``."""
    for name, t, legend in (
        ("q", q, "(B, H, L, Dh)"),
        ("k", k, "(B, G, S, Dh)"),
        ("v", v, "(B, G, S, Dh)"),
    ):
        check_floating(name, t)
        check_ndim(name, t, 4, legend)
    check_same_dtype_device(q=q, k=k, v=v)
    shapes = (
        f"q {shape_str(q.shape)}, k {shape_str(k.shape)}, v {shape_str(v.shape)}"
    )
    if k.shape != v.shape:
        raise ValueError(
            f"k and v must have the same shape (B, G, S, Dh), got {shapes}"
        )
    if q.size(0) != k.size(0) or q.size(-1) != k.size(-1):
        raise ValueError(
            f"q, k and v must have the same batch B and head width Dh, got {shapes}"
        )
    H, G = q.size(1), k.size(1)
    if H % G:
        raise ValueError(
            f"the number of query heads H = {H} must be a multiple of the number "
            f"of key/value heads G = {G} ({shapes}): each key/value head serves "
            "H / G query heads"
        )
    return H, G


def _group_mask(mask, B: int, H: int, G: int, L: int, S: int):
    """A mask that broadcasts to ``(B, H, L, S)``, reshaped to broadcast to the
    grouped scores ``(B, G, H / G, L, S)``."""
    check_mask(mask, (B, H, L, S), "(B, H, L, S)")
    if mask.dim() == 3:
        raise ValueError(
            f"a 3-D mask {shape_str(mask.shape)} is ambiguous for multi-head "
            "scores (B, H, L, S); for a per-example mask (B, L, S) pass "
            "mask[:, None] to get (B, 1, L, S)"
        )
    if mask.dim() < 3:
        return mask  # (L, S) or (S,): the same for every head
    mask = mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape))  # 4-D
    if mask.size(1) == 1:
        return mask[:, :, None]  # (B or 1, 1, 1, L, S)
    return mask.unflatten(1, (G, H // G))  # (B or 1, G, H / G, L, S)


# --8<-- [start:gqa]
def grouped_query_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``H`` query heads ``q`` ``(B, H, L, Dh)`` attend over ``G`` key/value
    heads ``k``, ``v`` ``(B, G, S, Dh)``; query head ``h`` uses key/value head
    ``h // (H / G)``.

    The ``H / G`` query heads of a group are stacked as extra query rows
    against their one key/value head, so K and V are never copied.

    Args:
        q: queries ``(B, H, L, Dh)``; ``H`` must be a multiple of ``G``.
        k: keys ``(B, G, S, Dh)``.
        v: values ``(B, G, S, Dh)``.
        mask: bool (True = may attend) or float (added), broadcastable to
            ``(B, H, L, S)``: e.g. ``(L, S)``, ``(B, 1, L, S)``, ``(B, H, L, S)``.
        scale: multiplies the scores; ``1 / sqrt(Dh)`` by default.

    Returns:
        ``(out (B, H, L, Dh), weights (B, H, L, S))``.
    """
    H, G = _check_gqa(q, k, v)
    B, _, L, Dh = q.shape
    S, n_rep = k.size(2), H // G
    scale = 1.0 / math.sqrt(Dh) if scale is None else scale
    rows = q.reshape(B, G, n_rep * L, Dh)  # a group's heads, one below the other
    scores = rows @ k.transpose(-2, -1) * scale  # (B, G, n_rep * L, S)
    scores = scores.view(B, G, n_rep, L, S)  # (B, G, H/G, L, S): free, a view
    if mask is not None:
        mask = _group_mask(mask, B, H, G, L, S)  # broadcasts to (B, G, H/G, L, S)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask
    weights = softmax(scores, dim=-1)  # (B, G, H/G, L, S)
    out = weights.view(B, G, n_rep * L, S) @ v  # (B, G, n_rep * L, Dh)
    # heads back in order: head h = g * (H / G) + r
    return out.view(B, H, L, Dh), weights.view(B, H, L, S)


# --8<-- [end:gqa]


# --8<-- [start:gqa_module]
class GroupedQueryAttention(nn.Module):
    """Self-attention with ``H`` query heads sharing ``G`` key/value heads,
    optionally with RoPE and a KV cache (the attention of Llama-style models).

    Args:
        d_model: D, the width of each token.
        num_heads: H, the number of query heads.
        num_kv_heads: G, the number of key/value heads; must divide H.
            ``G = H`` is multi-head attention, ``G = 1`` multi-query.
        head_dim: Dh; ``d_model // num_heads`` by default.
        bias: whether the four projections have a bias (Llama: none).

    ``forward(x, mask=None, *, rope=None, cache=None, layer=0)``: ``x`` is
    ``(B, L, D)``. The layer decides nothing about positions or masking; the
    model does, once per forward, and hands the result to every layer:

    - ``mask`` (bool, True = may attend, or float, added), broadcastable to
      ``(B, H, L, S)``; ``None`` lets every query attend to every key. A
      decoder passes ``causal_mask(L, S)``, aligned bottom-right when a cache
      holds ``S - L`` earlier keys.
    - ``rope``: the rotation angles ``(cos, sin)`` of the ``L`` positions,
      each ``(L, Dh)`` (``RotaryEmbedding``); ``None``: no rotation.
    - ``cache``: a ``KVCache``; the new keys and values (rotated) are appended
      to layer ``layer`` of it, and the queries attend over all ``S`` of them.

    Returns ``(out (B, L, D), weights (B, H, L, S))``, ``S = L`` without a
    cache.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        num_kv_heads: int,
        head_dim: int | None = None,
        *,
        bias: bool = False,
    ):
        super().__init__()
        _check_sizes(d_model, num_heads, num_kv_heads, head_dim)
        self.d_model, self.num_heads = d_model, num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads if head_dim is None else head_dim
        q_width = num_heads * self.head_dim  # H * Dh
        kv_width = num_kv_heads * self.head_dim  # G * Dh: the saving
        self.q_proj = nn.Linear(d_model, q_width, bias=bias)
        self.k_proj = nn.Linear(d_model, kv_width, bias=bias)
        self.v_proj = nn.Linear(d_model, kv_width, bias=bias)
        self.o_proj = nn.Linear(q_width, d_model, bias=bias)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        rope: tuple[torch.Tensor, torch.Tensor] | None = None,
        cache: KVCache | None = None,
        layer: int = 0,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        self._check_input(x, rope, cache)
        B, L, _ = x.shape
        Dh = self.head_dim
        # 1) project: H query heads, but only G key and value heads
        q = self.q_proj(x).view(B, L, -1, Dh).transpose(1, 2)  # (B, H, L, Dh)
        k = self.k_proj(x).view(B, L, -1, Dh).transpose(1, 2)  # (B, G, L, Dh)
        v = self.v_proj(x).view(B, L, -1, Dh).transpose(1, 2)  # (B, G, L, Dh)
        # 2) rotate queries and keys by the angles of their positions
        if rope is not None:
            q = rope_rotate(q, *rope)  # (B, H, L, Dh)
            k = rope_rotate(k, *rope)  # (B, G, L, Dh)
        # 3) with a cache: the new keys and values go after the cached ones
        if cache is not None:
            k, v = cache.append(layer, k, v)  # (B, G, S, Dh), S = cached + L
        out, weights = grouped_query_attention(q, k, v, mask)  # (B, H, L, Dh)
        out = out.transpose(1, 2).reshape(B, L, -1)  # (B, L, H * Dh)
        return self.o_proj(out), weights  # (B, L, D), (B, H, L, S)

    # --8<-- [end:gqa_module]

    def _check_input(self, x, rope, cache) -> None:
        check_floating("x", x)
        check_ndim("x", x, 3, "(B, L, D)")
        if x.size(-1) != self.d_model:
            raise ValueError(
                f"x has {x.size(-1)} features per token, expected d_model="
                f"{self.d_model} (x shape {shape_str(x.shape)})"
            )
        if rope is not None and not (isinstance(rope, tuple) and len(rope) == 2):
            raise TypeError(
                "rope must be the pair (cos, sin) of the model's rotation angles, "
                f"each (L, Dh), got {type(rope).__name__}"
            )
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache, got {type(cache).__name__}")

    def extra_repr(self) -> str:
        return (
            f"num_heads={self.num_heads}, num_kv_heads={self.num_kv_heads}, "
            f"head_dim={self.head_dim}"
        )


def _check_sizes(d_model, num_heads, num_kv_heads, head_dim) -> None:
    for name, value in (
        ("d_model", d_model),
        ("num_heads", num_heads),
        ("num_kv_heads", num_kv_heads),
    ):
        check_positive_int(name, value)
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_heads ({num_heads}) must be divisible by num_kv_heads "
            f"({num_kv_heads}): each key/value head serves num_heads / "
            "num_kv_heads query heads"
        )
    if head_dim is None:
        if d_model % num_heads:
            raise ValueError(
                f"d_model ({d_model}) must be divisible by num_heads "
                f"({num_heads}), or pass head_dim"
            )
    else:
        check_positive_int("head_dim", head_dim)
