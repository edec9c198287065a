"""Correct: an encoder's self-attention with no mask argument at all, forward(x): every token
sees every token, which the checker finds from behaviour."""

import torch.nn.functional as F
from torch import nn

EXPECTED: set[str] = set()
NOTE = "called as forward(x); bidirectional; no mask argument"


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        q, k, v = (t.unflatten(-1, (self.h, -1)).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v)  # (B, H, L, Dh)
        return self.out_proj(out.transpose(1, 2).flatten(2))
