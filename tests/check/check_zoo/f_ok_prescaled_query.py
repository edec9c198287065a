"""Correct: the query is scaled before the product (what keeps float16 scores finite)."""

import math

import torch

EXPECTED: set[str] = set()


def attention(q, k, v, mask=None):
    scores = (q / math.sqrt(q.size(-1))) @ k.mT
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.nan_to_num(weights, nan=0.0) @ v
