"""The heads are cut as nn.MultiheadAttention cuts them inside, from an (L, B, D) input, but
x is (B, L, D): the reshape to (L, B * H, Dh) puts tokens of different examples in one
"batch" row, so the examples of the batch mix. That is the root cause, whatever else the
scrambled heads break."""

import math

import torch
from torch import nn

EXPECTED = {"batch-mixing"}


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        B, L, D = x.shape
        dh = D // self.h
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        # written for (L, B, D): (L, B * H, Dh) -> (B * H, L, Dh)
        q, k, v = (t.reshape(L, B * self.h, dh).transpose(0, 1) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(dh)  # (B * H, L, L)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
        out = (weights @ v).transpose(0, 1).reshape(B, L, D)
        return self.out_proj(out)
