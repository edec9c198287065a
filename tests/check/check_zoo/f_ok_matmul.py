"""Correct: the textbook formula with matmul, -inf for forbidden keys, and zero weights for a
row with no allowed key. Returns (output, weights)."""

import math

import torch

EXPECTED: set[str] = set()


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ v, weights
