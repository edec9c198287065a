"""Cross-attention that never reads its context: the keys and values are projected from x,
copied from the query's line (self.kv(x) where self.kv(context) was meant). As
self-attention it is right; called with a context, its output does not depend on it. No
known mistake names that, so it is unexplained."""

import torch.nn.functional as F
from torch import nn

EXPECTED = {"unexplained"}
NOTE = "cross-attention through context="


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None, *, context=None):
        context = x if context is None else context
        B, L, D = x.shape
        q = self.q(x).view(B, L, self.h, -1).transpose(1, 2)
        k, v = self.kv(x).view(B, -1, 2, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out(out.transpose(1, 2).reshape(B, L, D))
