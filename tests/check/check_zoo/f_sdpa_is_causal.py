"""A plain wrapper that forwards is_causal to F.scaled_dot_product_attention. PyTorch's
is_causal=True is the top-left triangle, tril(ones(L, S)); the checker's causal reference is
bottom-right, causal_mask(L, S), the one for L < S queries at the end of S keys (decoding
after a cache). With L == S the two agree; the checker's L < S input names the difference."""

import torch.nn.functional as F

EXPECTED = {"causal-top-left"}


def attention(q, k, v, mask=None, is_causal=False):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
