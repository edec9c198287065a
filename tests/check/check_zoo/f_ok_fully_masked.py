"""Correct, the third of the trio: -inf for forbidden keys, then zero weights for a row that
has no allowed key at all — what F.scaled_dot_product_attention gives."""

import math

import torch

EXPECTED: set[str] = set()


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is None:
        return torch.softmax(scores, dim=-1) @ v
    scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v
