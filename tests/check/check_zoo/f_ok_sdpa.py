"""Correct: PyTorch's own function."""

import torch.nn.functional as F

EXPECTED: set[str] = set()


def attention(q, k, v, mask=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
