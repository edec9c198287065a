"""The output is moved to another device (here the meta device, which holds shapes and no
numbers; on a GPU machine a stray .cpu() does the same). One clear finding, no traceback."""

import torch.nn.functional as F

EXPECTED = {"shape"}


def attention(q, k, v, mask=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask).to("meta")
