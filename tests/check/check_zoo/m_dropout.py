"""dropout_p passed to F.scaled_dot_product_attention unconditionally: still on in eval()."""

import torch.nn.functional as F
from torch import nn

EXPECTED = {"dropout-in-eval"}


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.1):
        super().__init__()
        self.h, self.p = num_heads, dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.p)
        return self.proj(out.transpose(1, 2).reshape(B, L, D))
