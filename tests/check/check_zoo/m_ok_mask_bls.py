"""Correct: forward(x, mask=None) with masks (B, L, S), one per example; the head axis is
added inside (mask.unsqueeze(1)), so an (L, S) or (B, 1, L, S) mask does not fit, and the
checker hands it (B, L, S) masks."""

import math

import torch
from torch import nn

EXPECTED: set[str] = set()
NOTE = "masks (B, L, S), bool, True = may attend"


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h, self.d_k = num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        B, L, D = x.shape
        q, k, v = (
            w(x).view(B, L, self.h, self.d_k).transpose(1, 2)  # (B, H, L, Dk)
            for w in (self.w_q, self.w_k, self.w_v)
        )
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, H, L, L)
        if mask is not None:
            if mask.dim() != 3:
                raise ValueError(f"mask must be (B, L, S), got {tuple(mask.shape)}")
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
        return self.w_o((weights @ v).transpose(1, 2).reshape(B, L, D))
