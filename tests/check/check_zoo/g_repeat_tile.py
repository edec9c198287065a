"""K and V repeated with .repeat (a tile: heads 0, 1, 0, 1, ...) where repeat_interleave was
meant: query head h reads key/value head h % G instead of h // (H / G). With G = H, or
G = 1, it is right, so a test with ordinary multi-head inputs does not see it."""

import torch.nn.functional as F

EXPECTED = {"gqa-kv-head"}


def attention(q, k, v, mask=None):
    n_rep = q.size(1) // k.size(1)
    k = k.repeat(1, n_rep, 1, 1)  # BUG: tiles the heads; repeat_interleave(n_rep, 1)
    v = v.repeat(1, n_rep, 1, 1)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
