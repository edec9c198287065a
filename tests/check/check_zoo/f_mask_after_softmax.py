"""The mask multiplies the weights after the softmax: forbidden keys get 0, but the rows no
longer sum to 1 (and the forbidden scores still shaped the others)."""

import math

import torch

EXPECTED = {"weights-not-normalized"}


def attention(q, k, v, mask=None):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)
    if mask is not None:
        weights = weights * mask
    return weights @ v, weights
