"""A reshape instead of a transpose: the key gets the shape (..., Dk, S) of its transpose,
but its numbers are read in the wrong order (compare f_ok_permute)."""

import math

import torch

EXPECTED = {"wrong-transpose"}


def attention(q, k, v, mask=None):
    *batch, S, Dk = k.shape
    scores = q @ k.reshape(*batch, Dk, S) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0) @ v
