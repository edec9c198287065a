"""Pitfalls exercise 1: two bugs that never raise — no scale and softmax over the queries."""

import torch

EXPECTED = {"missing-scale", "softmax-dim"}


def attention(query, key, value, mask=None):
    scores = query @ key.transpose(-2, -1)  # (..., L, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-2).nan_to_num(0.0)
    return weights @ value
