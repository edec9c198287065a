"""Correct: a constructor with five arguments (input and output width, the longest context,
dropout, heads), causal attention built in from a True = blocked upper triangle filled in
place, forward(x), and dropout that eval() switches off. Checked through a lambda."""

import torch
from torch import nn

EXPECTED: set[str] = set()
TARGET = "build"
NOTE = "called as forward(x); causal built in"


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        ones = torch.ones(context_length, context_length)
        self.register_buffer("mask", torch.triu(ones, diagonal=1))

    def forward(self, x):
        b, num_tokens, _ = x.shape
        # (b, num_tokens, d_out) -> (b, num_heads, num_tokens, head_dim)
        q, k, v = (
            w(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
            for w in (self.W_query, self.W_key, self.W_value)
        )
        scores = q @ k.transpose(2, 3)
        scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        weights = self.dropout(torch.softmax(scores / self.head_dim**0.5, dim=-1))
        context = (weights @ v).transpose(1, 2)
        return self.out_proj(context.contiguous().view(b, num_tokens, -1))


build = lambda d_model, num_heads: MultiHeadAttention(d_model, d_model, 16, 0.1, num_heads)  # noqa: E731
