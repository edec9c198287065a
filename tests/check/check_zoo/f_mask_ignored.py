"""masked_fill returns a new tensor; without the assignment the mask does nothing."""

import math

import torch

EXPECTED = {"mask-ignored"}


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores.masked_fill(~mask, float("-inf"))  # the result is thrown away
    return torch.softmax(scores, dim=-1) @ v
