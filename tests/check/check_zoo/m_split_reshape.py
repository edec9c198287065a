"""The heads split with reshape(B, H, L, Dh) straight from (B, L, D): the right shape, but
each "position" of a head is cut from the features of other tokens. The leak under a causal
mask and the broken equivariance are symptoms of this one mistake."""

import torch.nn.functional as F
from torch import nn

EXPECTED = {"head-split"}


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        B, L, D = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, self.h, L, D // self.h) for t in (q, k, v))  # wrong
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.proj(out.transpose(1, 2).reshape(B, L, D))
