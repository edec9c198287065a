"""Correct, in the other convention: True = blocked, as nn.MultiheadAttention. Checked without
a flag, the checker finds the convention from behaviour."""

import math

import torch

EXPECTED: set[str] = set()
CONVENTION = "block"


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))  # True = blocked
    return torch.softmax(scores, dim=-1).nan_to_num(0.0) @ v
