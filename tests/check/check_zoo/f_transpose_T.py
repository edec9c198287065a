"""k.T reverses every axis; right only for a 2-D key."""

import math

import torch

EXPECTED = {"wrong-transpose"}


def attention(q, k, v, mask=None):
    scores = q @ k.T / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0) @ v
