"""Correct: heads split with permute(0, 2, 1, 3) (the same as transpose(1, 2) here), scores
and mixing with einsum, a hand-written safe softmax."""

import torch
from torch import nn

EXPECTED: set[str] = set()


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, d_model, bias=False)
        self.w_v = nn.Linear(d_model, d_model, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, mask=None):
        B, L, D = x.shape
        dh = D // self.h

        def heads(t):
            return t.reshape(B, L, self.h, dh).permute(0, 2, 1, 3)

        q, k, v = heads(self.w_q(x)), heads(self.w_k(x)), heads(self.w_v(x))
        scores = torch.einsum("bhid,bhjd->bhij", q, k) / dh**0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        top = scores.amax(dim=-1, keepdim=True).nan_to_num(0.0, neginf=0.0)
        e = torch.exp(scores - top)
        weights = e / e.sum(dim=-1, keepdim=True).clamp(min=1e-30)
        out = torch.einsum("bhij,bhjd->bhid", weights, v).permute(0, 2, 1, 3)
        return self.w_o(out.reshape(B, L, D)), weights
