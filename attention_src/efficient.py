"""Efficient attention: the FlashAttention forward pass in plain PyTorch, and a
multi-head attention module that calls PyTorch's fused kernel.

``tiled_attention`` computes exactly ``softmax(Q K^T / sqrt(Dk)) V`` but walks
over the scores in tiles of ``block_size`` queries by ``key_block_size`` keys,
keeping a running maximum ``m``, a running sum ``l`` and a rescaled running
output per query (the online softmax). It never holds the whole ``(L, S)``
score matrix: its extra memory grows with ``L + S``, not with ``L * S``.

``FastMultiHeadAttention`` is ``MultiHeadAttention`` with one fused Q/K/V
projection and ``F.scaled_dot_product_attention`` inside.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .multi_head import MultiHeadAttention, _empty_like_torch
from .scaled_dot_product import _check_qkv
from .validate import check_heads, check_mask, check_positive_int, check_probability

__all__ = ["tiled_attention", "FastMultiHeadAttention"]


def _check_no_grad(**tensors: torch.Tensor) -> None:
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors.values()):
        raise ValueError(
            "tiled_attention computes the forward pass only: it writes each tile "
            "with out= and in place, which autograd does not support (torch "
            "would stop inside the loop); call it under torch.no_grad(), or use "
            "F.scaled_dot_product_attention when you need gradients"
        )


# --8<-- [start:tiled_attention]
def tiled_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    *,
    causal: bool = False,
    block_size: int = 128,
    key_block_size: int | None = None,
) -> torch.Tensor:
    """``softmax(Q K^T / sqrt(Dk)) V``, one tile of scores at a time (forward only).

    Args:
        query: ``(..., L, Dk)``.
        key: ``(..., S, Dk)``.
        value: ``(..., S, Dv)``; the leading dimensions of the three broadcast.
        causal: query ``i`` sees key ``j`` iff ``j <= i + (S - L)`` (bottom-right
            aligned, as ``causal_mask``); tiles above that diagonal are skipped.
            A query that sees no key (only when L > S) gets a zero output.
        block_size: queries per tile.
        key_block_size: keys per tile; defaults to ``4 * block_size``, which
            measured faster on CPU than square tiles (fewer, larger matrix
            products; the benchmark's tile sweep compares other shapes).

    Returns:
        The output ``(..., L, Dv)``. The weights are never formed.
    """
    scores_shape = _check_qkv(query, key, value)  # (..., L, S)
    check_positive_int("block_size", block_size)
    if key_block_size is None:
        key_block_size = 4 * block_size
    check_positive_int("key_block_size", key_block_size)
    _check_no_grad(query=query, key=key, value=value)
    *batch, L, S = scores_shape
    Dk, Dv = query.size(-1), value.size(-1)
    # float16/bfloat16 in, float32 inside (for exp and the sums), cast back at
    # the end
    half = (torch.float16, torch.bfloat16)
    work = torch.float32 if query.dtype in half else query.dtype
    scale = 1.0 / math.sqrt(Dk)
    # (B, H) flattened into one batch dimension N; K transposed once, for Q @ K^T
    q = query.expand(*batch, L, Dk).reshape(-1, L, Dk)  # (N, L, Dk)
    k_t = key.expand(*batch, S, Dk).reshape(-1, S, Dk).transpose(1, 2)
    k_t = k_t.to(work, memory_format=torch.contiguous_format)  # (N, Dk, S)
    v = value.expand(*batch, S, Dv).reshape(-1, S, Dv).to(work)  # (N, S, Dv)
    N = v.size(0)
    out = query.new_zeros(N, L, Dv)  # (N, L, Dv)
    bq, bk = max(1, min(block_size, L)), max(1, min(key_block_size, S))
    scores = query.new_empty(N, bq, bk, dtype=work)  # the one tile, reused
    shift = S - L  # causal: query i sees keys j <= i + shift
    first = max(0, -shift) if causal else 0  # earlier queries see no key: 0

    for i0 in range(first, L, bq):
        i1 = min(i0 + bq, L)
        q_i = q[:, i0:i1].to(work) * scale  # (N, bq, Dk), scaled once
        m = q_i.new_full((N, i1 - i0, 1), -math.inf)  # running max per row
        ell = q_i.new_zeros(N, i1 - i0, 1)  # running sum of exp(s - m): ℓ
        acc = q_i.new_zeros(N, i1 - i0, Dv)  # running sum of exp(s - m) v
        # causal: the keys after `stop` are above the diagonal for every row
        stop = min(S, i1 + shift) if causal else S
        for j0 in range(0, stop, bk):
            j1 = min(j0 + bk, stop)
            s = scores[:, : i1 - i0, : j1 - j0]  # (N, bq, bk)
            # 1) the scores of this tile
            torch.bmm(q_i, k_t[:, :, j0:j1], out=s)
            if causal and j1 - 1 > i0 + shift:  # the tile crosses the diagonal
                above = torch.ones(
                    i1 - i0, j1 - j0, dtype=torch.bool, device=s.device
                )
                s.masked_fill_(above.triu_(i0 + shift - j0 + 1), -math.inf)
            # 2) the new running max
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            # 3) p = exp(s - m_new), in place
            s.sub_(m_new).exp_()
            # 4) alpha = exp(m_old - m_new) rescales what was summed so far
            alpha = m.sub_(m_new).exp_()
            # 5) ℓ = alpha ℓ + sum of p;  acc = alpha acc + p @ v
            ell.mul_(alpha).add_(s.sum(dim=-1, keepdim=True))
            acc.mul_(alpha).baddbmm_(s, v[:, j0:j1])
            m = m_new
        out[:, i0:i1] = acc / ell  # (N, bq, Dv)
    return out.reshape(*batch, L, Dv)


# --8<-- [end:tiled_attention]


# --8<-- [start:fast_mha]
class FastMultiHeadAttention(nn.Module):
    """Multi-head attention with one fused Q/K/V projection and PyTorch's SDPA.

    The same constructor, ``forward(x, mask=None, *, context=None)`` and
    ``from_torch`` as ``MultiHeadAttention``, and the same numbers; but
    ``qkv_proj`` (a ``Linear(D, 3D)``) projects Q, K and V in one matrix
    product, and ``F.scaled_dot_product_attention`` never forms the weights,
    so ``forward`` returns ``(output (B, L, D), None)``.
    """

    def __init__(
        self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True
    ):
        super().__init__()
        check_heads(d_model, num_heads)
        check_probability("dropout", dropout)
        self.d_model, self.num_heads, self.dropout = d_model, num_heads, dropout
        self.d_head = d_model // num_heads
        # one projection: rows 0..D-1 make Q, D..2D-1 make K, 2D..3D-1 make V
        self.qkv_proj = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        context: torch.Tensor | None = None,
    ):
        MultiHeadAttention._check_inputs(self, x, mask, context)  # the same checks
        B, L, D = x.shape
        H, Dh = self.num_heads, self.d_head
        if context is None:  # self-attention: Q, K, V in one matrix product
            S = L
            qkv = self.qkv_proj(x).view(B, L, 3, H, Dh)  # (B, L, 3, H, Dh)
            # views, not copies: SDPA takes any strides with a contiguous last dim
            q, k, v = qkv.permute(2, 0, 3, 1, 4)  # (B, H, L, Dh) each
        else:  # cross-attention: Q from x, K and V from context
            S = context.size(1)
            w_q, w_kv = self.qkv_proj.weight.split([D, 2 * D])
            b = self.qkv_proj.bias
            b_q, b_kv = (None, None) if b is None else b.split([D, 2 * D])
            # (B, H, L, Dh)
            q = F.linear(x, w_q, b_q).view(B, L, H, Dh).transpose(1, 2)
            kv = F.linear(context, w_kv, b_kv).view(B, S, 2, H, Dh)
            k, v = kv.permute(2, 0, 3, 1, 4)  # (B, H, S, Dh) each
        if mask is not None:
            self._check_mask(mask, (B, H, L, S), x.device)
        p = self.dropout if self.training else 0.0
        # (B, H, L, Dh): PyTorch's fused kernel, the weights are never formed
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        out = out.transpose(1, 2).reshape(B, L, D)  # (B, L, D)
        return self.out_proj(out), None

    # --8<-- [end:fast_mha]

    @staticmethod
    def _check_mask(mask, scores_shape, device) -> None:
        check_mask(mask, torch.Size(scores_shape), legend="(B, H, L, S)")
        if mask.device != device:
            raise ValueError(
                f"mask must be on the same device as x, got {mask.device} and "
                f"{device}"
            )

    @classmethod
    def from_torch(cls, m: nn.MultiheadAttention) -> FastMultiHeadAttention:
        """A ``FastMultiHeadAttention`` with the same weights as ``m``.

        ``m.in_proj_weight`` is already the fused ``(3D, D)`` matrix, so it is
        copied as it is. Same support as ``MultiHeadAttention.from_torch``:
        ``batch_first`` True or False, bias or not; not ``kdim``/``vdim``
        different from ``embed_dim``, ``add_bias_kv`` or ``add_zero_attn``.
        """
        ours, has_bias = _empty_like_torch(cls, m)
        with torch.no_grad():
            ours.qkv_proj.weight.copy_(m.in_proj_weight)
            ours.out_proj.weight.copy_(m.out_proj.weight)
            if has_bias:
                ours.qkv_proj.bias.copy_(m.in_proj_bias)
                ours.out_proj.bias.copy_(m.out_proj.bias)
        return ours.train(m.training)
