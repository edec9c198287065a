"""The mask is only used when it is 2-D... and forgotten in the call: it has no effect."""

import torch.nn.functional as F
from torch import nn

EXPECTED = {"mask-ignored"}


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v)  # attn_mask=mask forgotten
        return self.proj(out.transpose(1, 2).reshape(B, L, D))
