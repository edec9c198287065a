"""Correct: forward(query, key, value, mask=None), the four projections kept in a list, masks
(B, L, S) that the module widens to the heads itself, True (or 1) = may attend, read as
mask == 0 is blocked. Built as MultiHeadedAttention(h, d_model): heads first."""

import math

from torch import nn

EXPECTED: set[str] = set()
TARGET = "build"
NOTE = "called as forward(q, k, v, mask=mask); bidirectional"


class MultiHeadedAttention(nn.Module):
    def __init__(self, h, d_model):
        super().__init__()
        self.h, self.d_k = h, d_model // h
        self.linears = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)  # the same mask for every head
        n = query.size(0)
        # 1) project, and cut into h heads: (n, h, len, d_k)
        query, key, value = (
            lin(t).view(n, -1, self.h, self.d_k).transpose(1, 2)
            for lin, t in zip(self.linears, (query, key, value), strict=False)
        )
        # 2) attend
        scores = query @ key.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        p_attn = scores.softmax(dim=-1).nan_to_num(0.0)
        x = p_attn @ value
        # 3) put the heads side by side, project
        x = x.transpose(1, 2).contiguous().view(n, -1, self.h * self.d_k)
        return self.linears[-1](x)


def build(d_model, num_heads):
    return MultiHeadedAttention(num_heads, d_model)
