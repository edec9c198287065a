"""A sigmoid instead of the softmax: the weights are not a distribution over the keys, and
this is not one of the known mistakes, so the checker says the output is wrong without
naming a cause."""

import math

import torch

EXPECTED = {"unexplained"}


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.sigmoid(scores) @ v
