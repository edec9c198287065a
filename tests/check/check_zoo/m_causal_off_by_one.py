"""Causal attention built in, off by one: the triangle is tril(diagonal=1), so each token also
sees the next one. With no mask argument the checker classifies the module by behaviour:
neither causal (some outputs depend on later tokens) nor bidirectional (not all do)."""

import math

import torch
from torch import nn

EXPECTED = {"future-leak"}


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(D // self.h)
        allowed = torch.ones(L, L, dtype=torch.bool, device=x.device).tril(diagonal=1)
        scores = scores.masked_fill(~allowed, float("-inf"))  # one token too many
        out = torch.softmax(scores, dim=-1) @ v
        return self.out(out.transpose(1, 2).reshape(B, L, D))
