"""Softmax over the queries (dim=-2): each key's column sums to 1, not each query's row."""

import math

import torch

EXPECTED = {"softmax-dim"}


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-2).nan_to_num(0.0) @ v
