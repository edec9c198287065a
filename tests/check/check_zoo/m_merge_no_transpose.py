"""Split right, merged wrong: (B, H, L, Dh) reshaped to (B, L, D) without the transpose back,
so each output token is glued from one head's outputs at several positions."""

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
        q, k, v = (t.view(B, L, self.h, D // self.h).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.proj(out.reshape(B, L, D))  # the transpose(1, 2) is missing
