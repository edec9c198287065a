"""Correct: grouped-query attention by copying each key/value head H / G times in place
(repeat_interleave), then ordinary attention written out."""

import math

import torch

EXPECTED: set[str] = set()


def attention(q, k, v, mask=None):
    n_rep = q.size(1) // k.size(1)  # query heads per key/value head
    k = k.repeat_interleave(n_rep, dim=1)  # (B, H, S, Dh): head h is k head h // n_rep
    v = v.repeat_interleave(n_rep, dim=1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, L, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ v, weights
