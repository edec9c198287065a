"""The softmax without its division: the weights are exp(scores - max), never divided by
their sum, so each output is a sum of values, not an average. The checker sees the exp
reach the values undivided."""

import math

import torch
from torch import nn

EXPECTED = {"weights-not-normalized"}


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h, self.dh = num_heads, d_model // num_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.o = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        B, L, D = x.shape
        q, k, v = (
            p(x).view(B, L, self.h, self.dh).transpose(1, 2) for p in (self.q, self.k, self.v)
        )
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dh)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        top = scores.amax(dim=-1, keepdim=True).nan_to_num(0.0, neginf=0.0)
        weights = torch.exp(scores - top)  # the division by weights.sum(-1) is missing
        return self.o((weights @ v).transpose(1, 2).reshape(B, L, D))
