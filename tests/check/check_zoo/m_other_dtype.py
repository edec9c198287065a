"""The module computes in float64 (its weights were made double) and returns float64 for a
float32 input. One clear finding, no traceback from inside the checker."""

import torch.nn.functional as F
from torch import nn

EXPECTED = {"shape"}


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        B, L, D = x.shape
        x = x.double()
        q, k, v = self.qkv.double()(x).view(B, L, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out.double()(out.transpose(1, 2).reshape(B, L, D))
