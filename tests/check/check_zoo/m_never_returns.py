"""Never returns: forward waits for a flag that nothing sets. The time limit per call stops
it, and the message names the call the checker was making."""

import torch.nn.functional as F
from torch import nn

EXPECTED_ERROR = r"MyMultiHead\.forward\(x, mask=mask\) with x \(2, 5, 12\) did not return"
ARGS = ["--module", "--call-limit", "1"]


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h, self.ready = num_heads, False
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x, mask=None):
        while not self.ready:
            pass
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return out.transpose(1, 2).reshape(B, L, D)
