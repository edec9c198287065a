"""The mask multiplies the weights after the softmax. The returned rows no longer sum to 1,
and the blocked scores still shape the normaliser, so the future leaks in through it — a
symptom of the same mistake."""

import math

import torch
from torch import nn

EXPECTED = {"weights-not-normalized"}


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(D // self.h), dim=-1)
        if mask is not None:
            weights = weights * mask
        return self.proj((weights @ v).transpose(1, 2).reshape(B, L, D)), weights
