"""The attention is right, but the output is then centred over the sequence (dim=1, meant to
be the features, dim=-1): every position now depends on every other, future ones included."""

import torch.nn.functional as F
from torch import nn

EXPECTED = {"future-leak"}


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        out = self.proj(out.transpose(1, 2).reshape(B, L, D))
        return out - out.mean(dim=1, keepdim=True)  # over the tokens: a leak
