"""The softmax without its division: exp(scores) @ v. Divided row by row by its sum (the
output for values that are all 1) the output is right, which is how the checker tells an
unnormalised softmax from any other wrong output."""

import math

import torch

EXPECTED = {"weights-not-normalized"}


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.exp(scores) @ v
