"""masked_fill(mask, ...) with a True = may-attend mask: it blocks exactly the allowed keys.
Checked with --mask-convention allow, this is the mistake the flag names."""

import math

import torch

EXPECTED = {"mask-inverted"}
OPTIONS = {"mask_convention": "allow"}


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0) @ v
