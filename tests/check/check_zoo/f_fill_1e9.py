"""The second of the trio: -1e9 instead of -inf. Right wherever a query has an allowed key; a
fully masked row gets uniform weights over keys it was told to ignore (and in float16, -1e9
does not even fit)."""

import math

import torch

EXPECTED = {"fully-masked-uniform"}


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e9)
    return torch.softmax(scores, dim=-1) @ v
