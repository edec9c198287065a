"""The heads split with reshape(B, H, L, Dh) straight from (B, L, D), in a module that takes
q, k and v apart (so it is also checked as cross-attention): one mistake. The token mixing
the checker sees with a context of another length is a symptom of it, not a second finding."""

import torch.nn.functional as F
from torch import nn

EXPECTED = {"head-split"}


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, L, D = q.shape
        S = k.size(1)
        q = self.q(q).reshape(B, self.h, L, D // self.h)  # wrong
        k, v = (t.reshape(B, self.h, S, D // self.h) for t in self.kv(k).chunk(2, dim=-1))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.proj(out.transpose(1, 2).reshape(B, L, D))
