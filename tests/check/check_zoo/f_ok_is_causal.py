"""Correct: an is_causal flag whose triangle is aligned bottom-right, so that L new queries
after S - L cached keys see every key up to their own position."""

import torch.nn.functional as F

from attention_src import causal_mask

EXPECTED: set[str] = set()


def attention(q, k, v, mask=None, is_causal=False):
    if is_causal:
        mask = causal_mask(q.size(-2), k.size(-2), device=q.device)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
