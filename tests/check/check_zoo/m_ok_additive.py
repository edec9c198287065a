"""Correct: forward(x, attn_mask=None) with an additive float mask (0 where a query may
attend, -inf or a large negative number where not), added to the scores as transformers'
models do, and no special case for a query with no allowed key: what it gets is the fill
the caller picked, so the checker leaves it unchecked and says so."""

import math

import torch
from torch import nn

EXPECTED: set[str] = set()
CONVENTION = "float"
NOTE = "float, added to the scores"


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, attn_mask=None):
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(D // self.h)  # (B, H, L, L)
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        return self.out((weights @ v).transpose(1, 2).reshape(B, L, D))
