"""Correct: a loop over separate Head modules (the nanoGPT style), each scaled by its own
head size."""

import torch
import torch.nn.functional as F
from torch import nn

EXPECTED: set[str] = set()


class Head(nn.Module):
    def __init__(self, d_model, head_size):
        super().__init__()
        self.key = nn.Linear(d_model, head_size, bias=False)
        self.query = nn.Linear(d_model, head_size, bias=False)
        self.value = nn.Linear(d_model, head_size, bias=False)

    def forward(self, x, mask=None):
        k, q = self.key(x), self.query(x)  # (B, T, hs)
        wei = q @ k.transpose(-2, -1) * k.size(-1) ** -0.5  # (B, T, T)
        if mask is not None:
            wei = wei.masked_fill(~mask, float("-inf"))
        wei = F.softmax(wei, dim=-1).nan_to_num(0.0)
        return wei @ self.value(x)


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.heads = nn.ModuleList(Head(d_model, d_model // num_heads) for _ in range(num_heads))
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        if mask is not None and mask.dim() == 4:
            mask = mask[:, 0]  # (B, 1, L, L) -> (B, L, L), one per example
        return self.proj(torch.cat([head(x, mask) for head in self.heads], dim=-1))
