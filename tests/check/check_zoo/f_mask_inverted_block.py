"""masked_fill(~mask, -inf): the code reads True as may attend, but it is checked with
--mask-convention block (True = blocked, as nn.MultiheadAttention): it attends to exactly
the keys the mask blocks. The mistake the flag names, from the other side of
f_mask_inverted."""

import math

import torch

EXPECTED = {"mask-inverted"}
OPTIONS = {"mask_convention": "block"}


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0) @ v
