"""A MultiHeadAttentionBlock(d_model, h, dropout) in the style of the tutorials that build
the Transformer from its paper: four linears, heads split by view + transpose(1, 2), a static
attention method that fills the masked scores in place with -1e9, forward(q, k, v, mask).
Its masks say 1/True = may attend (its comments and callers build them so), but the fill is
written masked_fill_(mask, -1e9) for masked_fill_(mask == 0, -1e9): it blocks the keys the
mask allows. Checked with --mask-convention allow, the convention of its own masks. The -1e9
fill is a second mistake of its own (a query with no allowed key gets uniform weights), as in
f_annotated_mask_inverted."""

import math

from torch import nn

EXPECTED = {"mask-inverted", "fully-masked-uniform"}
OPTIONS = {"mask_convention": "allow"}
TARGET = "build"


class MultiHeadAttentionBlock(nn.Module):
    def __init__(self, d_model: int, h: int, dropout: float) -> None:
        super().__init__()
        assert d_model % h == 0, "d_model must be divisible by h"
        self.h, self.d_k = h, d_model // h
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    @staticmethod
    def attention(query, key, value, mask, dropout):
        d_k = query.shape[-1]
        scores = (query @ key.transpose(-2, -1)) / math.sqrt(d_k)  # (B, h, L, S)
        if mask is not None:
            scores.masked_fill_(mask, -1e9)  # BUG: mask == 0 (1/True = may attend)
        scores = scores.softmax(dim=-1)
        if dropout is not None:
            scores = dropout(scores)
        return scores @ value, scores

    def forward(self, q, k, v, mask):
        B = q.shape[0]
        query = self.w_q(q).view(B, -1, self.h, self.d_k).transpose(1, 2)
        key = self.w_k(k).view(B, -1, self.h, self.d_k).transpose(1, 2)
        value = self.w_v(v).view(B, -1, self.h, self.d_k).transpose(1, 2)
        x, self.attention_scores = self.attention(query, key, value, mask, self.dropout)
        x = x.transpose(1, 2).contiguous().view(B, -1, self.h * self.d_k)
        return self.w_o(x)


def build(d_model, num_heads):
    return MultiHeadAttentionBlock(d_model, num_heads, dropout=0.1)
