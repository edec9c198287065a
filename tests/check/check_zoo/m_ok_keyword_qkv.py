"""Correct: query, key and value are keyword-only, forward(*, query, key, value, mask=None),
with typed arguments; the checker passes x by those names."""

import math

import torch
from torch import nn

EXPECTED: set[str] = set()
NOTE = "called as forward(query=..., key=..., value=..., mask=mask)"


class MyMultiHead(nn.Module):
    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.heads, self.d_k = num_heads, d_model // num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def split(self, t: torch.Tensor) -> torch.Tensor:
        return t.unflatten(-1, (self.heads, self.d_k)).transpose(1, 2)  # (B, H, len, d_k)

    def forward(self, *, query, key, value, mask=None):
        q = self.split(self.query(query))
        k = self.split(self.key(key))
        v = self.split(self.value(value))
        scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        attn = torch.softmax(scores, dim=-1).nan_to_num(0.0)
        x = torch.einsum("bhij,bhjd->bhid", attn, v)
        return self.output(x.transpose(1, 2).flatten(2))
