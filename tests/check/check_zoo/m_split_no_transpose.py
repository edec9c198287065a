"""The heads split with view(B, L, H, Dh) and no transpose: attention then runs over the heads
of each token, and tokens never see each other."""

import math

import torch
from torch import nn

EXPECTED = {"head-split"}


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        B, L, D = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(B, L, self.h, D // self.h) for t in (q, k, v))  # no transpose
        scores = q @ k.transpose(-2, -1) / math.sqrt(D // self.h)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.proj(out.reshape(B, L, D))
