"""Scaled by the width of the values instead of the keys: right only when Dk == Dv."""

import math

import torch

EXPECTED = {"wrong-scale"}


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(v.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0) @ v
