"""Multi-head latent attention (MLA; DeepSeek-V2 and DeepSeek-V3).

The KV cache of multi-head attention keeps ``2 H Dh`` numbers per token and
layer; grouped-query attention shrinks that by sharing heads. MLA keeps one
small vector per token instead: the *latent* ``c`` (``kv_lora_rank`` wide,
normalised), from which an up-projection rebuilds the keys and values of every
head, plus one rotary key ``k_rope`` (``qk_rope_head_dim`` wide) that all heads
share. That is ``kv_lora_rank + qk_rope_head_dim`` numbers per token and layer.

Each head's query and key have two parts. The *content* part
(``qk_nope_head_dim``, no position in it) comes from the latent; the *rotary*
part (``qk_rope_head_dim``) carries the position, by RoPE. Why apart: the
score of the content parts is ``q_nope . (W_UK c) = (W_UK^T q_nope) . c``, so
the key up-projection ``W_UK`` can move to the query side ("absorbed") and the
keys never need rebuilding. A rotation between ``W_UK`` and ``c`` would depend
on the key's position and could not move; so the position goes into a few
extra features of their own, rotated after the projection, and only those.

``latent_attention`` computes both ways: the plain one rebuilds every
head's keys and values from the cached latents (``W_UK``, ``W_UV``: the
layer's ``k_up`` and ``v_up``, one matrix per head) and runs ordinary
attention; the absorbed one folds ``W_UK`` into the query and applies
``W_UV`` after the weighted sum, so the attention itself runs over the
latents: one key head of width ``kv_lora_rank + qk_rope_head_dim`` shared by
every query head, multi-query attention in disguise.

The RoPE layout is the interleaved one DeepSeek uses (neighbouring features
pair up, ``rotate_pairs``). The sizes keep the names of
DeepSeek's config (``q_lora_rank``, ``kv_lora_rank``, ...), so that a reader can
hold ours next to it; ``MultiHeadLatentAttention.from_transformers``
copies a layer of transformers' DeepSeek-V3.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .kv_cache import KVCache
from .rope import RotaryEmbedding, rope_rotate
from .scaled_dot_product import scaled_dot_product_attention
from .validate import (
    check_floating,
    check_mask,
    check_ndim,
    check_positive_int,
    check_same_dtype_device,
    check_tensor,
    shape_str,
)

__all__ = [
    "latent_attention",
    "MultiHeadLatentAttention",
    "latent_cache_bytes_per_token",
]


def _check_latent(q_nope, q_rope, latent, k_rope, k_up, v_up, mask) -> None:
    legends = (
        ("q_nope", q_nope, "(B, H, L, Dn)"),
        ("q_rope", q_rope, "(B, H, L, Dr)"),
        ("latent", latent, "(B, 1, S, Dc)"),
        ("k_rope", k_rope, "(B, 1, S, Dr)"),
        ("k_up", k_up, "(H, Dn, Dc)"),
        ("v_up", v_up, "(H, Dv, Dc)"),
    )
    for name, t, legend in legends:
        check_floating(name, t)
        check_ndim(name, t, legend.count(",") + 1, legend, batch_hint=False)
    check_same_dtype_device(**{name: t for name, t, _ in legends})
    B, H, L, Dn = q_nope.shape
    S, Dc = latent.size(2), latent.size(3)
    expected = {
        "q_rope": (B, H, L, q_rope.size(3)),
        "latent": (B, 1, S, Dc),
        "k_rope": (B, 1, S, q_rope.size(3)),
        "k_up": (H, Dn, Dc),
        "v_up": (H, v_up.size(1), Dc),
    }
    for name, t, legend in legends[1:]:
        if tuple(t.shape) != expected[name]:
            shapes = ", ".join(f"{n} {shape_str(x.shape)}" for n, x, _ in legends)
            raise ValueError(
                f"{name} must be {legend} = {shape_str(expected[name])} to fit "
                f"the others, got {shape_str(t.shape)} ({shapes})"
            )
    if mask is not None:
        _check_heads_mask(mask, (B, H, L, S))


def _check_heads_mask(mask, scores_shape) -> None:
    """A mask for multi-head scores ``(B, H, L, S)``: no 3-D masks."""
    check_tensor("mask", mask)
    if mask.dim() == 3:
        raise ValueError(
            f"a 3-D mask {shape_str(mask.shape)} is ambiguous for multi-head "
            "scores (B, H, L, S); for a per-example mask (B, L, S) pass "
            "mask[:, None] to get (B, 1, L, S)"
        )
    check_mask(mask, scores_shape, "(B, H, L, S)")


# --8<-- [start:latent_attention]
def latent_attention(
    q_nope: torch.Tensor,
    q_rope: torch.Tensor,
    latent: torch.Tensor,
    k_rope: torch.Tensor,
    k_up: torch.Tensor,
    v_up: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    scale: float | None = None,
    absorb: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention of ``H`` query heads over keys and values kept as latents.

    Head ``h``'s key of token ``j`` is ``[k_up[h] @ c_j, k_rope_j]`` and its
    value ``v_up[h] @ c_j``, with ``c_j`` the latent of token ``j``. The
    plain way builds them; the absorbed way (``absorb=True``) never does:
    ``q . (k_up c) = (k_up^T q) . c``, and a weighted sum of values is
    ``v_up`` times the weighted sum of latents. The same result.

    Args:
        q_nope: the content part of the queries ``(B, H, L, Dn)``.
        q_rope: their rotary part, rotated ``(B, H, L, Dr)``.
        latent: the latents ``(B, 1, S, Dc)``, one per token.
        k_rope: the rotary key of each token, rotated, shared by all heads
            ``(B, 1, S, Dr)``.
        k_up: the key up-projection of each head ``(H, Dn, Dc)``.
        v_up: the value up-projection of each head ``(H, Dv, Dc)``.
        mask: bool (True = may attend) or float (added), broadcastable to
            ``(B, H, L, S)``.
        scale: multiplies the scores; ``1 / sqrt(Dn + Dr)`` by default, the
            width of a query in the plain way (in both ways).
        absorb: attend over the latents directly.

    Returns:
        ``(out (B, H, L, Dv), weights (B, H, L, S))``.
    """
    _check_latent(q_nope, q_rope, latent, k_rope, k_up, v_up, mask)
    H, Dr = q_nope.size(1), q_rope.size(-1)
    scale = 1.0 / math.sqrt(q_nope.size(-1) + Dr) if scale is None else scale
    if not absorb:  # the plain way: every head's keys and values, rebuilt
        k_nope = latent @ k_up.transpose(-2, -1)  # (B, H, S, Dn)
        v = latent @ v_up.transpose(-2, -1)  # (B, H, S, Dv)
        k_rope = k_rope.expand(-1, H, -1, -1)  # (B, H, S, Dr): shared, a view
        k = torch.cat([k_nope, k_rope], dim=-1)  # (B, H, S, Dn + Dr)
        q = torch.cat([q_nope, q_rope], dim=-1)  # (B, H, L, Dn + Dr)
        return scaled_dot_product_attention(q, k, v, mask, scale=scale)
    # absorbed: k_up moves to the query, and v_up after the weighted sum
    q = torch.cat([q_nope @ k_up, q_rope], dim=-1)  # (B, H, L, Dc + Dr)
    k = torch.cat([latent, k_rope], dim=-1)  # (B, 1, S, Dc + Dr): one key head
    out, weights = scaled_dot_product_attention(q, k, latent, mask, scale=scale)
    return out @ v_up.transpose(-2, -1), weights  # (B, H, L, Dv), (B, H, L, S)


# --8<-- [end:latent_attention]


# --8<-- [start:mla_module]
class MultiHeadLatentAttention(nn.Module):
    """Self-attention whose keys and values are rebuilt from one small latent
    vector per token (DeepSeek's MLA), with RoPE on a separate rotary key
    shared by all heads, and a KV cache that holds only the latents and the
    rotary keys.

    Args:
        d_model: D, the width of each token.
        num_heads: H.
        kv_lora_rank: Dc, the width of the latent, what the cache keeps.
        qk_nope_head_dim: Dn, the content part of each head's query and key.
        qk_rope_head_dim: Dr, even: the rotary part of each head's query, and
            the width of the one rotary key all heads share.
        v_head_dim: Dv, the width of each head's value.
        q_lora_rank: the width the queries are compressed to on the way (and
            normalised at); ``None`` projects them directly.
        rope_base: the RoPE frequency base of the rotary helper
            (``positions=``).
        eps: of the two RMSNorms (latent and compressed query).
        bias: whether the projections that read ``x``, and ``o_proj``, have a
            bias (the up-projections never do).

    The key and value up-projections are one matrix per head, ``k_up``
    ``(H, Dn, Dc)`` and ``v_up`` ``(H, Dv, Dc)`` (the paper's ``W_UK`` and
    ``W_UV``), so that both ways of ``latent_attention`` can use them.

    ``forward(x, mask=None, *, rope=None, positions=None, cache=None, layer=0,
    absorb=False)``: ``x`` is ``(B, L, D)``. As in every layer of the
    package, the model decides the mask and the positions:

    - ``mask`` (bool, True = may attend, or float, added), broadcastable to
      ``(B, H, L, S)``; ``None`` lets every query attend to every key.
    - ``rope``: the angles ``(cos, sin)`` of the ``L`` positions, each
      ``(L, Dr)``, from the model's ``RotaryEmbedding(Dr, base,
      interleaved=True)``; or, for a standalone call, ``positions`` ``(L,)``
      and the layer gets them from ``self.rotary``, the same helper.
    - ``cache``: a ``KVCache``; the latents ``(B, 1, L, Dc)`` and rotated
      rotary keys ``(B, 1, L, Dr)`` of the new tokens go to layer ``layer``.
    - ``absorb``: attend over the latents directly (the same result).

    Returns ``(out (B, L, D), weights (B, H, L, S))``.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        *,
        kv_lora_rank: int,
        qk_nope_head_dim: int,
        qk_rope_head_dim: int,
        v_head_dim: int,
        q_lora_rank: int | None = None,
        rope_base: float = 10000.0,
        eps: float = 1e-6,
        bias: bool = False,
    ):
        super().__init__()
        _check_sizes(
            d_model=d_model,
            num_heads=num_heads,
            kv_lora_rank=kv_lora_rank,
            qk_nope_head_dim=qk_nope_head_dim,
            qk_rope_head_dim=qk_rope_head_dim,
            v_head_dim=v_head_dim,
            q_lora_rank=q_lora_rank,
        )
        self.d_model, self.num_heads = d_model, num_heads
        self.q_lora_rank, self.kv_lora_rank = q_lora_rank, kv_lora_rank
        self.qk_nope_head_dim = qk_nope_head_dim
        self.qk_rope_head_dim = qk_rope_head_dim
        self.v_head_dim = v_head_dim
        H, Dn, Dr, Dv = num_heads, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        # queries: D -> (compressed, normalised ->) H heads of Dn + Dr
        if q_lora_rank is None:
            self.q_proj = nn.Linear(d_model, H * (Dn + Dr), bias=False)
        else:
            self.q_down = nn.Linear(d_model, q_lora_rank, bias=bias)
            self.q_norm = nn.RMSNorm(q_lora_rank, eps)
            self.q_up = nn.Linear(q_lora_rank, H * (Dn + Dr), bias=False)
        # keys and values: D -> the latent Dc -> H heads of Dn (keys) and Dv
        self.kv_down = nn.Linear(d_model, kv_lora_rank, bias=bias)
        self.kv_norm = nn.RMSNorm(kv_lora_rank, eps)  # PyTorch's
        self.k_up = nn.Parameter(torch.empty(H, Dn, kv_lora_rank))  # W_UK per head
        self.v_up = nn.Parameter(torch.empty(H, Dv, kv_lora_rank))  # W_UV per head
        bound = 1.0 / math.sqrt(kv_lora_rank)  # as nn.Linear initialises a weight
        nn.init.uniform_(self.k_up, -bound, bound)
        nn.init.uniform_(self.v_up, -bound, bound)
        # the rotary key: D -> Dr, one for all heads
        self.k_rope_proj = nn.Linear(d_model, Dr, bias=bias)
        self.o_proj = nn.Linear(H * Dv, d_model, bias=bias)
        self.rotary = RotaryEmbedding(Dr, rope_base, interleaved=True)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        rope: tuple[torch.Tensor, torch.Tensor] | None = None,
        positions: torch.Tensor | None = None,
        cache: KVCache | None = None,
        layer: int = 0,
        absorb: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        self._check_input(x, mask, rope, positions, cache, layer, absorb)
        B, L, _ = x.shape
        H, Dn, Dr = self.num_heads, self.qk_nope_head_dim, self.qk_rope_head_dim
        if rope is None:  # a standalone call: the angles of its positions
            rope = self.rotary(positions.to(x.device), dtype=x.dtype)  # (L, Dr) x2
        # 1) queries: H heads, each a content part and a rotary part
        q = self._queries(x).view(B, L, H, Dn + Dr).transpose(1, 2)  # (B,H,L,Dn+Dr)
        q_nope, q_rope = q.split([Dn, Dr], dim=-1)  # (B, H, L, Dn), (B, H, L, Dr)
        # 2) per token: one normalised latent, one rotary key for all heads
        latent = self.kv_norm(self.kv_down(x))[:, None]  # (B, 1, L, Dc)
        k_rope = self.k_rope_proj(x)[:, None]  # (B, 1, L, Dr)
        # 3) the position goes into the rotary parts only
        q_rope = rope_rotate(q_rope, *rope, interleaved=True)  # (B, H, L, Dr)
        k_rope = rope_rotate(k_rope, *rope, interleaved=True)  # (B, 1, L, Dr)
        # 4) the cache keeps these two: Dc + Dr numbers per token
        if cache is not None:
            latent, k_rope = cache.append(layer, latent, k_rope)  # S = cached + L
        # 5) attention over the latents, the plain or the absorbed way
        kv = (latent, k_rope, self.k_up, self.v_up)  # what K and V come from
        out, weights = latent_attention(q_nope, q_rope, *kv, mask, absorb=absorb)
        out = out.transpose(1, 2).reshape(B, L, -1)  # (B, L, H * Dv)
        return self.o_proj(out), weights  # (B, L, D), (B, H, L, S)

    def _queries(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, L, D) -> (B, L, H * (Dn + Dr))``."""
        if self.q_lora_rank is None:
            return self.q_proj(x)
        return self.q_up(self.q_norm(self.q_down(x)))  # through q_lora_rank

    # --8<-- [end:mla_module]

    def _check_input(self, x, mask, rope, positions, cache, layer, absorb):
        check_floating("x", x)
        check_ndim("x", x, 3, "(B, L, D)")
        if x.size(-1) != self.d_model:
            raise ValueError(
                f"x has {x.size(-1)} features per token, expected d_model="
                f"{self.d_model} (x shape {shape_str(x.shape)})"
            )
        if rope is None and positions is None:
            raise ValueError(
                "pass the positions of the L tokens: rope=(cos, sin) from the "
                "model's RotaryEmbedding(qk_rope_head_dim, interleaved=True), or "
                "positions (L,) for a standalone call"
            )
        if rope is not None and positions is not None:
            raise ValueError(
                "pass either rope=(cos, sin) or positions, not both: the angles "
                "come from one place"
            )
        if rope is not None and not (isinstance(rope, tuple) and len(rope) == 2):
            raise TypeError(
                "rope must be the pair (cos, sin) of the model's rotation angles, "
                f"each (L, qk_rope_head_dim), got {type(rope).__name__}"
            )
        if positions is not None:
            check_tensor("positions", positions)
            if positions.dim() != 1 or positions.numel() != x.size(1):
                raise ValueError(
                    f"positions must be (L,) = ({x.size(1)},), one per token of x "
                    f"{shape_str(x.shape)}, got shape {shape_str(positions.shape)}"
                )
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache, got {type(cache).__name__}")
        if mask is not None:  # checked before the cache grows
            B, L = x.shape[:2]
            S = L + (cache.layer_length(layer) if cache is not None else 0)
            _check_heads_mask(mask, (B, self.num_heads, L, S))
        if not isinstance(absorb, bool):
            raise TypeError(f"absorb must be True or False, got {absorb!r}")

    @classmethod
    def from_transformers(
        cls, layer: nn.Module, config
    ) -> MultiHeadLatentAttention:
        """A ``MultiHeadLatentAttention`` with the weights of ``layer``, a
        transformers ``DeepseekV3Attention``, and the sizes of ``config``, its
        ``DeepseekV3Config``; on the layer's device, in its dtype.

        transformers computes the latent and the rotary key with one
        projection (``kv_a_proj_with_mqa``); its rows are split here into
        ``kv_down`` and ``k_rope_proj``. Supported: the interleaved RoPE layout
        (``rope_interleave=True``) without rope scaling (YaRN changes the
        angles and the softmax scale).
        """
        if not all(
            hasattr(layer, name) for name in ("kv_a_proj_with_mqa", "kv_b_proj")
        ):
            raise TypeError(
                "layer must be a transformers DeepseekV3Attention, got "
                f"{type(layer).__name__}"
            )
        params = dict(getattr(config, "rope_parameters", None) or {})
        if params.get("rope_type", "default") != "default":
            raise ValueError(
                "from_transformers copies layers without rope scaling, got "
                f"rope_type={params.get('rope_type')!r}"
            )
        if not getattr(config, "rope_interleave", False):
            raise ValueError(
                "from_transformers needs rope_interleave=True: this layer rotates "
                "neighbouring features, DeepSeek's layout"
            )
        Dc = config.kv_lora_rank
        ours = cls(
            config.hidden_size,
            config.num_attention_heads,
            kv_lora_rank=Dc,
            qk_nope_head_dim=config.qk_nope_head_dim,
            qk_rope_head_dim=config.qk_rope_head_dim,
            v_head_dim=config.v_head_dim,
            q_lora_rank=config.q_lora_rank,
            rope_base=float(params.get("rope_theta", 10000.0)),
            eps=layer.kv_a_layernorm.variance_epsilon,  # its norms' own eps
            bias=bool(config.attention_bias),
        )
        kv_a = layer.kv_a_proj_with_mqa  # (Dc + Dr, D): the latent, then k_rope
        H, Dn = config.num_attention_heads, config.qk_nope_head_dim
        kv_b = layer.kv_b_proj.weight.view(H, -1, Dc)  # (H, Dn + Dv, Dc), per head
        pairs = [
            (ours.kv_down.weight, kv_a.weight[:Dc]),
            (ours.k_rope_proj.weight, kv_a.weight[Dc:]),
            (ours.kv_norm.weight, layer.kv_a_layernorm.weight),
            (ours.k_up, kv_b[:, :Dn]),  # (H, Dn, Dc)
            (ours.v_up, kv_b[:, Dn:]),  # (H, Dv, Dc)
            (ours.o_proj.weight, layer.o_proj.weight),
        ]
        if config.q_lora_rank is None:
            pairs.append((ours.q_proj.weight, layer.q_proj.weight))
        else:
            pairs += [
                (ours.q_down.weight, layer.q_a_proj.weight),
                (ours.q_norm.weight, layer.q_a_layernorm.weight),
                (ours.q_up.weight, layer.q_b_proj.weight),
            ]
        if config.attention_bias:
            pairs += [
                (ours.kv_down.bias, kv_a.bias[:Dc]),
                (ours.k_rope_proj.bias, kv_a.bias[Dc:]),
                (ours.o_proj.bias, layer.o_proj.bias),
            ]
            if config.q_lora_rank is not None:
                pairs.append((ours.q_down.bias, layer.q_a_proj.bias))
        weight = layer.kv_b_proj.weight
        ours.to(device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            for mine, theirs in pairs:
                mine.copy_(theirs)
        return ours.train(layer.training)

    def extra_repr(self) -> str:
        return (
            f"num_heads={self.num_heads}, q_lora_rank={self.q_lora_rank}, "
            f"kv_lora_rank={self.kv_lora_rank}, "
            f"qk_nope_head_dim={self.qk_nope_head_dim}, "
            f"qk_rope_head_dim={self.qk_rope_head_dim}, "
            f"v_head_dim={self.v_head_dim}"
        )


def _check_sizes(**sizes) -> None:
    for name, value in sizes.items():
        if name != "q_lora_rank" or value is not None:
            check_positive_int(name, value)
    if sizes["qk_rope_head_dim"] % 2:
        raise ValueError(
            f"qk_rope_head_dim must be even, got {sizes['qk_rope_head_dim']}: "
            "RoPE turns the rotary features in pairs"
        )


def latent_cache_bytes_per_token(
    num_layers: int,
    kv_lora_rank: int,
    qk_rope_head_dim: int,
    bytes_per_element: int,
) -> int:
    """Bytes the cache of a ``MultiHeadLatentAttention`` model holds per
    token: the latent and the rotary key, every layer,
    ``num_layers * (kv_lora_rank + qk_rope_head_dim) * bytes_per_element``.

    Whatever the number of heads: next to
    ``kv_cache_bytes_per_token`` of multi-head
    and grouped-query attention, whose cache grows with the heads.
    """
    for name, value in (
        ("num_layers", num_layers),
        ("kv_lora_rank", kv_lora_rank),
        ("qk_rope_head_dim", qk_rope_head_dim),
        ("bytes_per_element", bytes_per_element),
    ):
        check_positive_int(name, value)
    return num_layers * (kv_lora_rank + qk_rope_head_dim) * bytes_per_element
