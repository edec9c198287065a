"""Correct: a decoder's self-attention with the causal triangle built in and a padding mask
from the tokenizer, attention_mask (B, S), 1 for a real token and 0 for padding, combined
with the triangle inside. The checker finds the causal pattern from behaviour and hands the
padding over as (B, S)."""

import math

import torch
from torch import nn

EXPECTED: set[str] = set()
NOTE = "causal built in; masks (B, S) key padding, bool, True = may attend"


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, hidden_states, attention_mask=None):
        B, L, D = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(B, L, 3, self.h, -1).permute(2, 0, 3, 1, 4)
        allowed = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()  # (L, L)
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :].bool()  # (B, 1, L, L)
        scores = q @ k.transpose(-2, -1) / math.sqrt(D // self.h)
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        return self.o_proj((weights @ v).transpose(1, 2).reshape(B, L, D))
