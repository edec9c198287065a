"""k.transpose(1, 2): right for a 3-D key (B, S, Dk), wrong once a head axis is added."""

import math

import torch

EXPECTED = {"wrong-transpose"}


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(1, 2) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0) @ v
