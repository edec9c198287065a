"""Correct: one matrix at a time, in a loop over every leading index (batch and heads)."""

import math

import torch

EXPECTED: set[str] = set()


def attention(q, k, v, mask=None):
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    L, S = q.size(-2), k.size(-2)
    q, k, v = (t.expand(*batch, *t.shape[-2:]).reshape(-1, *t.shape[-2:]) for t in (q, k, v))
    if mask is not None:
        mask = mask.expand(*batch, L, S).reshape(-1, L, S)
    outputs = []
    for i in range(q.size(0)):
        scores = q[i] @ k[i].T / math.sqrt(q.size(-1))  # (L, S): 2-D, so .T is right
        if mask is not None:
            scores = scores.masked_fill(~mask[i], float("-inf"))
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
        outputs.append(weights @ v[i])
    return torch.stack(outputs).reshape(*batch, L, v.size(-1))
