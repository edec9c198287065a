"""One head of self-attention: the queries, keys and values are three learned
linear views of the same input ``x``."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .validate import (
    check_mask,
    check_positive_int,
    check_probability,
    check_vectors,
)

__all__ = ["SelfAttention"]


# --8<-- [start:self_attention]
class SelfAttention(nn.Module):
    """Single-head self-attention.

    Args:
        d_model: D, the width of each input token.
        d_k: width of queries and keys (defaults to ``d_model``).
        d_v: width of values and of the output (defaults to ``d_model``).
        dropout: dropout on the attention weights during training.

    ``forward(x, mask=None)`` takes ``x`` of shape ``(B, L, D)`` and a bool
    mask broadcastable to ``(B, L, L)``; it returns ``(output (B, L, d_v),
    weights (B, L, L))``.
    """

    def __init__(
        self,
        d_model: int,
        d_k: int | None = None,
        d_v: int | None = None,
        dropout: float = 0.0,
    ):
        super().__init__()
        d_k = d_model if d_k is None else d_k
        d_v = d_model if d_v is None else d_v
        for name, value in (("d_model", d_model), ("d_k", d_k), ("d_v", d_v)):
            check_positive_int(name, value)
        check_probability("dropout", dropout)
        self.d_model, self.d_k, self.d_v, self.dropout = d_model, d_k, d_v, dropout
        self.q_proj = nn.Linear(d_model, d_k, bias=False)  # W_Q: D -> d_k
        self.k_proj = nn.Linear(d_model, d_k, bias=False)  # W_K: D -> d_k
        self.v_proj = nn.Linear(d_model, d_v, bias=False)  # W_V: D -> d_v

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None):
        check_vectors("x", x, self.d_model, legend="(B, L, D)")
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)  # (B, L, d_k|d_v)
        # 1) every query against every key, scaled by 1/√d_k
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, L, L)
        # 2) hide what the mask forbids (a float mask is added instead)
        if mask is not None:
            check_mask(mask, scores.shape, legend="(B, L, L)")
            if mask.dtype == torch.bool:
                scores = scores.masked_fill(~mask, float("-inf"))
            else:
                scores = scores + mask
        # 3) weights that sum to 1 (a query left with no key gets zeros)
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # (B, L, L)
        if self.training and self.dropout > 0.0:
            weights = F.dropout(weights, p=self.dropout)
        # 4) each output is the weighted average of the values
        return weights @ v, weights  # (B, L, d_v), (B, L, L)


# --8<-- [end:self_attention]
