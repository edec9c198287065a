"""Correct, True = blocked, checked with --mask-convention block."""

import torch.nn.functional as F

EXPECTED: set[str] = set()
OPTIONS = {"mask_convention": "block"}
CONVENTION = "block"


def attention(q, k, v, mask=None):
    allowed = None if mask is None else ~mask
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
