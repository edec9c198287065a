"""The output is right, but the "weights" it returns are the scores before the softmax."""

import math

import torch

EXPECTED = {"weights-not-normalized"}


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ v, scores
