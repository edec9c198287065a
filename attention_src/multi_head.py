"""Multi-head attention: H attention heads of width Dh = D / H side by side,
each with its own slice of the Q, K, V projections, merged by ``out_proj``."""

from __future__ import annotations

import torch
from torch import nn

from .scaled_dot_product import scaled_dot_product_attention
from .validate import check_heads, check_probability, check_vectors, shape_str

__all__ = ["MultiHeadAttention", "split_heads", "merge_heads"]


# --8<-- [start:split_merge]
def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``(B, L, D) -> (B, H, L, Dh)``: cut the features into H slices of width
    Dh."""
    B, L, D = x.shape
    x = x.view(B, L, num_heads, D // num_heads)  # (B, L, H, Dh)
    return x.transpose(1, 2)  # (B, H, L, Dh)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(B, H, L, Dh) -> (B, L, D)``: put the heads' outputs back side by side."""
    B, H, L, Dh = x.shape
    x = x.transpose(1, 2)  # (B, L, H, Dh), no longer contiguous in memory
    # reshape copies when it must; view would fail here
    return x.reshape(B, L, H * Dh)


# --8<-- [end:split_merge]


# --8<-- [start:mha]
class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate Q, K, V and output projections.

    Args:
        d_model: D, the width of each token.
        num_heads: H; must divide ``d_model``.
        dropout: dropout on the attention weights during training.
        bias: whether the four projections have a bias.

    ``forward(x, mask=None, *, context=None)``: ``x`` is ``(B, L, D)``. ``mask``
    is bool, True = may attend, broadcastable to ``(B, H, L, S)``: for example
    ``(L, S)``, ``(B, 1, 1, S)`` or ``(B, 1, L, S)``. Keys and values come from
    ``x`` itself (self-attention, S = L) or, keyword-only, from ``context``
    ``(B, S, D)`` (cross-attention: ``mha(x, context=memory)``). Returns
    ``(output (B, L, D), weights (B, H, L, S))``.
    """

    def __init__(
        self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True
    ):
        super().__init__()
        check_heads(d_model, num_heads)
        check_probability("dropout", dropout)
        self.d_model, self.num_heads, self.dropout = d_model, num_heads, dropout
        self.d_head = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        context: torch.Tensor | None = None,
    ):
        self._check_inputs(x, mask, context)
        context = x if context is None else context
        # 1) project, then cut each projection into H heads
        q = split_heads(self.q_proj(x), self.num_heads)  # (B, H, L, Dh)
        k = split_heads(self.k_proj(context), self.num_heads)  # (B, H, S, Dh)
        v = split_heads(self.v_proj(context), self.num_heads)  # (B, H, S, Dh)
        # 2) every head attends independently, in one batched call
        p = self.dropout if self.training else 0.0
        # (B, H, L, Dh)
        out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=p)
        # 3) put the heads side by side and mix them
        return self.out_proj(merge_heads(out)), weights  # (B, L, D), (B, H, L, S)

    # --8<-- [end:mha]

    def _check_inputs(self, x, mask, context) -> None:
        """The checks of ``forward``, shared with ``FastMultiHeadAttention``."""
        if (
            isinstance(mask, torch.Tensor)
            and mask.is_floating_point()
            and mask.dim() == 3
            and mask.size(-1) == self.d_model
        ):  # a sequence (B, S, D) where context used to go
            name = type(self).__name__
            raise TypeError(
                f"the second argument of {name}.forward is the mask, got a float "
                f"tensor of shape {shape_str(mask.shape)}, which looks like a "
                "sequence (B, S, D); context is keyword-only: for "
                "cross-attention call attn(x, context=memory)"
            )
        check_vectors("x", x, self.d_model, legend="(B, L, D)")
        if context is not None:
            check_vectors("context", context, self.d_model, legend="(B, S, D)")
            if context.size(0) != x.size(0):
                raise ValueError(
                    "x and context must have the same batch size B, "
                    f"got {x.size(0)} and {context.size(0)}"
                )
        if isinstance(mask, torch.Tensor) and mask.dim() == 3:
            raise ValueError(
                f"a 3-D mask {shape_str(mask.shape)} is ambiguous for multi-head "
                "scores (B, H, L, S); for a per-example mask (B, L, S) pass "
                "mask[:, None] to get (B, 1, L, S)"
            )

    @classmethod
    def from_torch(cls, m: nn.MultiheadAttention) -> MultiHeadAttention:
        """A ``MultiHeadAttention`` with the same weights as ``m``.

        Works for ``batch_first`` True or False (our forward is always
        batch-first) and with or without bias. Not supported: ``kdim``/``vdim``
        different from ``embed_dim``, ``add_bias_kv``, ``add_zero_attn``.
        """
        ours, has_bias = _empty_like_torch(cls, m)
        w_q, w_k, w_v = m.in_proj_weight.detach().chunk(3, dim=0)  # each (D, D)
        with torch.no_grad():
            ours.q_proj.weight.copy_(w_q)
            ours.k_proj.weight.copy_(w_k)
            ours.v_proj.weight.copy_(w_v)
            ours.out_proj.weight.copy_(m.out_proj.weight)
            if has_bias:
                b_q, b_k, b_v = m.in_proj_bias.detach().chunk(3)
                ours.q_proj.bias.copy_(b_q)
                ours.k_proj.bias.copy_(b_k)
                ours.v_proj.bias.copy_(b_v)
                ours.out_proj.bias.copy_(m.out_proj.bias)
        return ours.train(m.training)


def _empty_like_torch(cls, m: nn.MultiheadAttention):
    """``(cls(...) with m's sizes, dropout, bias, device and dtype; has_bias)``,
    after checking that ``m`` is an ``nn.MultiheadAttention`` that ``from_torch``
    can copy. Shared by both multi-head modules' ``from_torch``."""
    if not isinstance(m, nn.MultiheadAttention):
        raise TypeError(
            f"m must be an nn.MultiheadAttention, got {type(m).__name__}"
        )
    if not m._qkv_same_embed_dim:
        raise ValueError("from_torch needs kdim == vdim == embed_dim")
    if m.bias_k is not None or m.add_zero_attn:
        raise ValueError("from_torch does not support add_bias_kv or add_zero_attn")
    has_bias = m.in_proj_bias is not None
    ours = cls(m.embed_dim, m.num_heads, dropout=m.dropout, bias=has_bias)
    ours.to(device=m.in_proj_weight.device, dtype=m.in_proj_weight.dtype)
    return ours, has_bias
