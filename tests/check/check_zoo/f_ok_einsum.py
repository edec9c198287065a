"""Correct: einsum with an ellipsis (any leading dimensions), torch.where for the mask."""

import torch

EXPECTED: set[str] = set()


def attention(q, k, v, mask=None):
    scores = torch.einsum("...ld,...sd->...ls", q, k) * q.size(-1) ** -0.5
    if mask is not None:
        scores = torch.where(mask, scores, float("-inf"))
        allowed_any = mask.any(dim=-1, keepdim=True)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = torch.where(allowed_any, weights, 0.0)
    return torch.einsum("...ls,...sd->...ld", weights, v)
