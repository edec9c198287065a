"""Correct: PyTorch's own grouped-query attention."""

import torch.nn.functional as F

EXPECTED: set[str] = set()


def attention(q, k, v, mask=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
