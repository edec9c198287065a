"""Correct, and chatty: forward prints every tensor it makes. The checker captures what it
prints and notes it; none of it reaches the report."""

import torch.nn.functional as F
from torch import nn

EXPECTED: set[str] = set()
NOTE = "lines while it was checked (captured, not shown)"


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        print("built", self)

    def forward(self, x, mask=None):
        B, L, D = x.shape
        print("x", x)
        q, k, v = self.qkv(x).view(B, L, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        print("q", q, "k", k, "v", v, "mask", mask)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        print("out", out)
        return self.out(out.transpose(1, 2).reshape(B, L, D))
