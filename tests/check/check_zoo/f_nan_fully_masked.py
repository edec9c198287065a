"""The first of the trio: -inf and a plain softmax give NaN to a row with no allowed key."""

import math

import torch

EXPECTED = {"nan-fully-masked"}


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
