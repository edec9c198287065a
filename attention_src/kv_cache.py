"""The KV cache: keep every layer's keys and values from earlier decoding steps,
so each new token only projects its own K and V and attends over the stored ones.

``DecoderOnlyLM.generate(..., use_cache=True)`` runs :func:`generate_with_cache`;
``attention_src.bench.measure_kv_cache`` times decoding with and without the
cache.
"""

from __future__ import annotations

import torch
from torch import nn

from .checks import check_heads, check_positive_int, shape_str
from .masks import causal_mask
from .multi_head import MultiHeadAttention, merge_heads, split_heads
from .scaled_dot_product import scaled_dot_product_attention

__all__ = [
    "KVCache",
    "cached_attention",
    "forward_with_cache",
    "generate_with_cache",
    "count_kv_projections",
    "kv_cache_bytes_per_token",
]


# --8<-- [start:kv_cache]
class KVCache:
    """Per-layer keys and values, each ``(B, G, S, Dh)``; ``S`` grows as tokens
    arrive.

    ``G`` is the number of key/value heads: ``G = H`` for multi-head
    attention, fewer when query heads share them (grouped-query attention).
    ``append(layer, k, v)`` stores the new ``(B, G, L, Dh)`` keys and values
    after the cached ones and returns the whole ``(B, G, S + L, Dh)`` pair.
    ``length`` is the number of cached positions, which is also the absolute
    position of the next token; ``layer_length(layer)`` is the same count for
    one layer (while a step runs, the layers before it are one step ahead).
    """

    def __init__(self, num_layers: int):
        check_positive_int("num_layers", num_layers)
        self.keys: list[torch.Tensor | None] = [None] * num_layers
        self.values: list[torch.Tensor | None] = [None] * num_layers

    @property
    def length(self) -> int:
        return 0 if self.keys[-1] is None else self.keys[-1].size(2)

    def layer_length(self, layer: int) -> int:
        self._check_layer(layer)
        return 0 if self.keys[layer] is None else self.keys[layer].size(2)

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        self._check_layer(layer)
        if self.keys[layer] is not None:
            self._check_fits(layer, k, v)
            k = torch.cat([self.keys[layer], k], dim=2)  # (B, G, S + L, Dh)
            v = torch.cat([self.values[layer], v], dim=2)  # (B, G, S + L, Dh)
        self.keys[layer], self.values[layer] = k, v
        return k, v

    # --8<-- [end:kv_cache]

    def _check_layer(self, layer) -> None:
        n = len(self.keys)
        if isinstance(layer, bool) or not isinstance(layer, int):
            raise TypeError(f"layer must be an int, got {type(layer).__name__}")
        if not 0 <= layer < n:
            raise ValueError(f"layer must be in [0, {n}), got {layer}")

    def _check_fits(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        old = self.keys[layer]
        for name, new in (("k", k), ("v", v)):
            if (
                new.dim() != 4
                or new.shape[:2] != old.shape[:2]
                or (new.size(3) != old.size(3))
            ):
                raise ValueError(
                    f"{name} of shape {shape_str(new.shape)} does not fit the "
                    f"cache of layer {layer}, {shape_str(old.shape)} (B, G, S, "
                    "Dh): B, G and Dh must match"
                )


# --8<-- [start:cached_attention]
def cached_attention(
    attn: MultiHeadAttention, x: torch.Tensor, cache: KVCache, layer: int
) -> torch.Tensor:
    """Self-attention of ``L`` new tokens ``x`` ``(B, L, D)`` over the cache plus
    themselves.

    Only the new tokens are projected to K and V; the cached ones are reused.
    The new queries are the *last* ``L`` of ``S`` positions, so the mask is
    bottom-right aligned: ``causal_mask(L, S)``. A single query is the newest
    position and may see every key, so it needs no mask at all.
    """
    q = split_heads(attn.q_proj(x), attn.num_heads)  # (B, H, L, Dh)
    k_new = split_heads(attn.k_proj(x), attn.num_heads)  # (B, H, L, Dh)
    v_new = split_heads(attn.v_proj(x), attn.num_heads)  # (B, H, L, Dh)
    k, v = cache.append(layer, k_new, v_new)  # (B, H, S, Dh), S = cached + L
    L, S = x.size(1), k.size(2)
    mask = causal_mask(L, S, device=x.device) if L > 1 else None  # (L, S) or none
    out, _ = scaled_dot_product_attention(q, k, v, mask)  # (B, H, L, Dh)
    return attn.out_proj(merge_heads(out))  # (B, L, D)


# --8<-- [end:cached_attention]


# --8<-- [start:forward_with_cache]
def forward_with_cache(
    model: nn.Module, tokens: torch.Tensor, cache: KVCache
) -> torch.Tensor:
    """Logits ``(B, L, V)`` for ``tokens`` ``(B, L)`` that come after the cached
    ones.

    The same computation as ``DecoderOnlyLM.forward`` (pre-norm blocks), except
    that attention reads the cache and the positions start at ``cache.length``:
    the new tokens' absolute positions, not 0.
    """
    start, L = cache.length, tokens.size(1)
    positions = torch.arange(start, start + L, device=tokens.device)  # (L,)
    # (B, L, D)
    x = model.token_embedding(tokens) + model.position_embedding(positions)
    for layer, block in enumerate(model.blocks):
        # (B, L, D)
        x = x + cached_attention(block.self_attn, block.norm1(x), cache, layer)
        x = x + block.ff(block.norm2(x))  # (B, L, D)
    return model.head(model.final_norm(x))  # (B, L, V)


# --8<-- [end:forward_with_cache]


# --8<-- [start:generate_with_cache]
@torch.no_grad()
def generate_with_cache(
    model: nn.Module, prompt: torch.Tensor, max_new_tokens: int
):
    """Greedy decoding with a KV cache: ``(B, L0)`` -> ``(B, L0 + max_new_tokens)``.

    The prompt goes through the model once, as one chunk (filling the cache);
    after that each step feeds only the token just chosen.
    """
    if max_new_tokens == 0:
        return prompt
    cache = KVCache(len(model.blocks))
    logits = forward_with_cache(model, prompt, cache)  # (B, L0, V)
    next_token = logits[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1)
    pieces = [prompt, next_token]
    for _ in range(max_new_tokens - 1):
        logits = forward_with_cache(model, next_token, cache)  # (B, 1, V)
        next_token = logits[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1)
        pieces.append(next_token)
    return torch.cat(pieces, dim=1)  # (B, L0 + max_new_tokens)


# --8<-- [end:generate_with_cache]


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
) -> int:
    """Bytes the cache holds per token: K and V, every layer.

    With multi-head attention each of K and V is ``d_model = H * Dh`` wide.
    With ``G = num_kv_heads`` key/value heads shared by ``H = num_heads``
    query heads (grouped-query attention) it is ``G * Dh``, ``H / G`` times
    less; both counts are needed, to know ``Dh = d_model / H``.
    """
    for name, value in (
        ("num_layers", num_layers),
        ("d_model", d_model),
        ("bytes_per_element", bytes_per_element),
    ):
        check_positive_int(name, value)
    width = d_model  # G * Dh, which is H * Dh = d_model without sharing
    if num_kv_heads is not None or num_heads is not None:
        if num_kv_heads is None or num_heads is None:
            raise ValueError(
                "pass num_heads and num_kv_heads together: the cache width is "
                "num_kv_heads * (d_model / num_heads)"
            )
        check_heads(d_model, num_heads)
        check_positive_int("num_kv_heads", num_kv_heads)
        if num_heads % num_kv_heads:
            raise ValueError(
                f"num_heads ({num_heads}) must be divisible by num_kv_heads "
                f"({num_kv_heads}): each key/value head serves the same number "
                "of query heads"
            )
        width = num_kv_heads * (d_model // num_heads)
    return 2 * num_layers * width * bytes_per_element
