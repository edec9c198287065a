"""Sequence-first, x (L, B, D), checked with --seq-first: the scores are made key-first by
einsum, (B, H, S, L), and the softmax runs over dim=-1 of them, the queries, where the keys
are dim=-2. The report's fix names the keys' axis of these scores, and its "how" line the
layout x was handed over in, (L, B, D)."""

import math

import torch
from torch import nn

EXPECTED = {"softmax-dim"}
OPTIONS = {"seq_first": True}


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):  # x (L, B, D), mask (L, S) or (B, 1, L, S)
        L, B, D = x.shape
        q, k, v = self.qkv(x).view(L, B, 3, self.h, D // self.h).unbind(2)
        scores = torch.einsum("sbhd,lbhd->bhsl", k, q) / math.sqrt(D // self.h)
        if mask is not None:
            scores = scores.masked_fill(~mask.transpose(-2, -1), float("-inf"))
        weights = scores.softmax(dim=-1).nan_to_num(0.0)  # BUG: the keys are dim=-2
        out = torch.einsum("bhsl,sbhd->lbhd", weights, v)  # (L, B, H, Dh)
        return self.out(out.reshape(L, B, D))
