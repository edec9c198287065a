"""Correct: grouped-query attention without copying K and V: the queries are viewed as
(B, G, H / G, L, Dh), so the H / G query heads of a group broadcast against their one
key/value head."""

import math

import torch

EXPECTED: set[str] = set()


def attention(q, k, v, mask=None):
    B, H, L, Dh = q.shape
    G = k.size(1)
    q = q.view(B, G, H // G, L, Dh)  # head h = g * (H / G) + r
    scores = q @ k[:, :, None].transpose(-2, -1) / math.sqrt(Dh)  # (B, G, H/G, L, S)
    if mask is not None:
        mask = mask.expand(B, H, L, k.size(2)).reshape(B, G, H // G, L, -1)
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    out = weights @ v[:, :, None]  # (B, G, H/G, L, Dh)
    return out.reshape(B, H, L, Dh)
