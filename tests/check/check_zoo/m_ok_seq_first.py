"""Correct, sequence-first: nn.MultiheadAttention with its default batch_first=False, fed
(L, B, D), checked with --seq-first. Masks are handed over as nn.MultiheadAttention wants
them: inverted, and (B, 1, L, L) as (B * H, L, L)."""

from torch import nn

EXPECTED: set[str] = set()
OPTIONS = {"seq_first": True}


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.mha = nn.MultiheadAttention(d_model, num_heads)  # (L, B, D)

    def forward(self, x, mask=None):
        L, B, _ = x.shape
        if mask is not None and mask.dim() == 4:
            mask = mask.expand(B, self.h, L, L).reshape(B * self.h, L, L)
        blocked = None if mask is None else ~mask
        out, _ = self.mha(x, x, x, attn_mask=blocked, need_weights=False)
        return out
