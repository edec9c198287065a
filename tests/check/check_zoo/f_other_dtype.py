"""Right numbers, wrong dtype: the output comes back in float64 whatever the inputs are. The
checker reports it as a shape finding (the output's dtype is part of its contract)."""

import torch.nn.functional as F

EXPECTED = {"shape"}


def attention(q, k, v, mask=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask).double()
