"""Correct (for 4-D input): k.permute(0, 1, 3, 2) swaps the last two axes of a (B, H, S, Dk) key,
exactly as k.transpose(-2, -1) does. It cannot take 2-D or 3-D input, which the checker notes
without calling it a mistake."""

import math

import torch

EXPECTED: set[str] = set()


def attention(q, k, v, mask=None):
    scores = q @ k.permute(0, 1, 3, 2) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0) @ v
