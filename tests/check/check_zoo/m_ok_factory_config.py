"""Correct: a constructor that takes a config object, causal attention built in (a lower
triangle kept as a buffer, the nanoGPT way) and forward(x) with no mask argument. Checked
through a one-line factory, build(d_model, num_heads)."""

import math
from dataclasses import dataclass

import torch
from torch import nn

EXPECTED: set[str] = set()
TARGET = "build"
NOTE = "called as forward(x); causal built in; no mask argument"


@dataclass
class Config:
    n_embd: int
    n_head: int
    block_size: int = 32


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        size = config.block_size
        self.register_buffer("tril", torch.ones(size, size).tril().view(1, 1, size, size))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))  # (B, nh, T, T)
        att = att.masked_fill(self.tril[:, :, :T, :T] == 0, float("-inf"))
        y = torch.softmax(att, dim=-1) @ v  # (B, nh, T, hs)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


def build(d_model, num_heads):
    return CausalSelfAttention(Config(n_embd=d_model, n_head=num_heads))
