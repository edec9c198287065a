"""The KV cache: keep every layer's keys and values from earlier decoding steps,
so each new token only projects its own K and V and attends over the stored ones.

``KVCache`` is the one cache of the package: the decoder of the causal-attention
chapter (multi-head attention, through ``cached_attention``) and the
grouped-query layers of SmolLM2 store their keys and values in it. A model
takes it in its forward, ``model(tokens, cache=cache)``, and decides the
positions and the mask of the new tokens itself; ``greedy_decode``
(``attention_src.decoder``) decodes with it, and
``attention_src.bench.measure_kv_cache`` times decoding with and without it.
"""

from __future__ import annotations

import torch
from torch import nn

from .multi_head import MultiHeadAttention, merge_heads, split_heads
from .scaled_dot_product import scaled_dot_product_attention
from .validate import (
    check_floating,
    check_heads,
    check_ndim,
    check_positive_int,
    shape_str,
)

__all__ = [
    "KVCache",
    "cached_attention",
    "cache_start",
    "count_kv_projections",
    "kv_cache_bytes_per_token",
]


# --8<-- [start:kv_cache]
class KVCache:
    """Per-layer store of what attention keeps from earlier steps: for
    multi-head and grouped-query attention the keys and values, each
    ``(B, G, S, Dh)``; ``S`` grows as tokens arrive.

    ``G`` is the number of key/value heads: ``G = H`` for multi-head
    attention, fewer when query heads share them (grouped-query attention).
    ``append(layer, k, v)`` stores the new ``(B, G, L, Dh)`` keys and values
    after the cached ones and returns the whole ``(B, G, S + L, Dh)`` pair.
    ``length`` is the number of cached positions, which is also the absolute
    position of the next token.

    The store does not care what it holds: a layer may append any tensors
    whose second-to-last dimension is the position, ``(..., S, width)`` (the
    same number of them at every step), e.g. one compressed vector per token
    instead of a key and a value.
    """

    def __init__(self, num_layers: int):
        check_positive_int("num_layers", num_layers)
        self.layers: list[tuple[torch.Tensor, ...]] = [()] * num_layers

    def append(self, layer: int, *new: torch.Tensor) -> tuple[torch.Tensor, ...]:
        self._check_append(layer, new)
        if self.layers[layer]:  # after the cached positions, along S
            new = tuple(
                torch.cat([old, t], dim=-2)  # (..., S + L, width)
                for old, t in zip(self.layers[layer], new, strict=True)
            )
        self.layers[layer] = new
        return new

    def layer_length(self, layer: int) -> int:
        """The number of positions stored in ``layer``."""
        self._check_layer(layer)
        stored = self.layers[layer]
        return stored[0].size(-2) if stored else 0

    @property
    def length(self) -> int:
        """The number of cached positions (of the last layer: while a step
        runs, the layers before it already hold the new tokens)."""
        return self.layer_length(len(self.layers) - 1)

    # --8<-- [end:kv_cache]

    @property
    def keys(self) -> list[torch.Tensor | None]:
        """The first tensor each layer stores (the keys), None where empty."""
        return [stored[0] if stored else None for stored in self.layers]

    @property
    def values(self) -> list[torch.Tensor | None]:
        """The second tensor each layer stores (the values), None where empty."""
        return [stored[1] if len(stored) > 1 else None for stored in self.layers]

    def _check_layer(self, layer) -> None:
        n = len(self.layers)
        if isinstance(layer, bool) or not isinstance(layer, int):
            raise TypeError(f"layer must be an int, got {type(layer).__name__}")
        if not 0 <= layer < n:
            raise ValueError(f"layer must be in [0, {n}), got {layer}")

    def _check_append(self, layer, new: tuple) -> None:
        self._check_layer(layer)
        if not new:
            raise ValueError("append at least one tensor, e.g. append(layer, k, v)")
        for i, t in enumerate(new):
            if not isinstance(t, torch.Tensor):
                raise TypeError(
                    f"append takes tensors, got {type(t).__name__} as tensor {i}"
                )
            if t.dim() < 2:
                raise ValueError(
                    f"tensor {i} must have a position dimension (..., L, width), "
                    f"got shape {shape_str(t.shape)}"
                )
        old = self.layers[layer]
        if not old:
            return
        if len(new) != len(old):
            raise ValueError(
                f"layer {layer} holds {len(old)} tensors per position, got "
                f"{len(new)}: append the same kinds of tensors at every step"
            )
        for i, (o, t) in enumerate(zip(old, new, strict=True)):
            if t.dim() != o.dim() or t.shape[:-2] + t.shape[-1:] != (
                o.shape[:-2] + o.shape[-1:]
            ):
                raise ValueError(
                    f"tensor {i} of shape {shape_str(t.shape)} does not fit the "
                    f"cache of layer {layer}, {shape_str(o.shape)}: every "
                    "dimension but the position (the second to last) must match"
                )


# --8<-- [start:cached_attention]
def cached_attention(
    attn: MultiHeadAttention,
    x: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    cache: KVCache,
    layer: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Self-attention of ``L`` new tokens ``x`` ``(B, L, D)`` over the cached
    keys and values plus their own, with the weights of ``attn``.

    Only the new tokens are projected to K and V; the cached ones are reused.
    The mask is the caller's decision (the model's): the new queries are the
    *last* ``L`` of ``S`` positions, so a decoder passes the bottom-right
    ``causal_mask(L, S)``, and nothing for a single query, the newest
    position, which may see every key. ``mask=None`` attends to every key.
    Returns ``(out (B, L, D), weights (B, H, L, S))``.
    """
    _check_cached_inputs(attn, x, cache)
    q = split_heads(attn.q_proj(x), attn.num_heads)  # (B, H, L, Dh)
    k_new = split_heads(attn.k_proj(x), attn.num_heads)  # (B, H, L, Dh)
    v_new = split_heads(attn.v_proj(x), attn.num_heads)  # (B, H, L, Dh)
    k, v = cache.append(layer, k_new, v_new)  # (B, H, S, Dh), S = cached + L
    out, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, H, L, Dh)
    return attn.out_proj(merge_heads(out)), weights  # (B, L, D), (B, H, L, S)


# --8<-- [end:cached_attention]


def _check_cached_inputs(attn, x, cache) -> None:
    if not isinstance(attn, MultiHeadAttention):
        raise TypeError(
            f"attn must be a MultiHeadAttention, got {type(attn).__name__}"
        )
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a KVCache, got {type(cache).__name__}")
    check_floating("x", x)
    check_ndim("x", x, 3, "(B, L, D)")
    if x.size(-1) != attn.d_model:
        raise ValueError(
            f"x has {x.size(-1)} features per token, expected d_model="
            f"{attn.d_model} (x shape {shape_str(x.shape)})"
        )


def cache_start(
    cache: KVCache | None, num_layers: int, new_tokens: int, max_len: int
) -> int:
    """The absolute position of the first of ``new_tokens`` tokens that a model
    reads after its cache: ``cache.length``, or 0 without a cache.

    Checks that ``cache`` is a ``KVCache`` with one slot per layer of the model
    (``num_layers``), and that the cached and the new tokens together fit in
    the model's ``max_len`` positions.
    """
    start = 0
    if cache is not None:
        if not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache, got {type(cache).__name__}")
        if len(cache.layers) != num_layers:
            raise ValueError(
                f"the cache has {len(cache.layers)} layers, the model "
                f"{num_layers}: make it with model.new_cache()"
            )
        start = cache.length
    if start + new_tokens > max_len:
        raise ValueError(
            f"tokens of length {new_tokens} after {start} cached positions need "
            f"{start + new_tokens} positions, more than max_len={max_len}"
        )
    return start


def count_kv_projections(
    model: nn.Module, prompt: torch.Tensor, max_new_tokens: int, *, use_cache: bool
) -> list[int]:
    """How many token rows go through a K projection (summed over layers) at each
    step.

    Counted live with forward hooks on every block's ``k_proj`` while
    ``model.generate`` runs; entry ``i`` is step ``i`` (step 0 reads the prompt).
    V is projected exactly as often as K.
    """
    counts: list[int] = []

    def hook(module, inputs, output):
        counts.append(inputs[0].shape[:-1].numel())  # B * L rows in this call

    handles = [b.self_attn.k_proj.register_forward_hook(hook) for b in model.blocks]
    try:
        model.generate(prompt, max_new_tokens, use_cache=use_cache)
    finally:
        for h in handles:
            h.remove()
    n = len(model.blocks)  # one call per layer per step
    return [sum(counts[i : i + n]) for i in range(0, len(counts), n)]


def kv_cache_bytes_per_token(
    num_layers: int,
    d_model: int,
    bytes_per_element: int,
    *,
    num_heads: int | None = None,
    num_kv_heads: int | None = None,
    head_dim: int | None = None,
) -> int:
    """Bytes the cache holds per token: K and V, every layer.

    With multi-head attention each of K and V is ``d_model = H * Dh`` wide.
    With ``G = num_kv_heads`` key/value heads shared by ``H = num_heads``
    query heads (grouped-query attention) it is ``G * Dh``, ``H / G`` times
    less. ``Dh`` is ``head_dim`` when given (models such as Gemma set it
    apart from the width: ``GroupedQueryAttention`` takes it too), and
    ``d_model / H`` by default; the head counts are needed either way.

    Raises:
        TypeError: a size that is not an int.
        ValueError: a size that is not positive; only one of the two head
            counts, or ``head_dim`` without them; ``num_heads`` not a
            multiple of ``num_kv_heads``; without ``head_dim``, ``d_model``
            not a multiple of ``num_heads``.
    """
    for name, value in (
        ("num_layers", num_layers),
        ("d_model", d_model),
        ("bytes_per_element", bytes_per_element),
    ):
        check_positive_int(name, value)
    width = d_model  # G * Dh, which is H * Dh = d_model without sharing
    if num_kv_heads is not None or num_heads is not None or head_dim is not None:
        _check_cache_heads(d_model, num_heads, num_kv_heads, head_dim)
        if head_dim is None:
            head_dim = d_model // num_heads
        width = num_kv_heads * head_dim
    return 2 * num_layers * width * bytes_per_element


def _check_cache_heads(d_model, num_heads, num_kv_heads, head_dim) -> None:
    if num_kv_heads is None or num_heads is None:
        raise ValueError(
            "pass num_heads and num_kv_heads together, and head_dim only with "
            "them: the cache width is num_kv_heads * head_dim, head_dim = "
            f"d_model / num_heads by default; got num_heads={num_heads}, "
            f"num_kv_heads={num_kv_heads}"
        )
    if head_dim is None:
        check_heads(d_model, num_heads)
    else:
        check_positive_int("num_heads", num_heads)
        check_positive_int("head_dim", head_dim)
    check_positive_int("num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_heads ({num_heads}) must be divisible by num_kv_heads "
            f"({num_kv_heads}): each key/value head serves the same number "
            "of query heads"
        )
