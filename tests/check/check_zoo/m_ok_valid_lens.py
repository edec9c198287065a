"""Correct, in the style of a textbook that masks by valid lengths: forward(queries, keys,
values, valid_lens), where valid_lens (B,) says how many keys of each example are real, and
a masked softmax fills the rest with -1e6 before it. Heads are folded into the batch. The
checker hands it lengths; a length cannot say "causal", so that is not checked."""

import math

import torch
from torch import nn

EXPECTED: set[str] = set()
NOTE = "masks as (B,) valid lengths"


def masked_softmax(scores, valid_lens):
    """Softmax over the last axis, keeping only the first valid_lens[i] keys of row i."""
    if valid_lens is None:
        return torch.softmax(scores, dim=-1)
    S = scores.size(-1)
    keep = torch.arange(S, device=scores.device)[None, :] < valid_lens[:, None]  # (B*H, S)
    scores = scores.masked_fill(~keep[:, None, :], -1e6)
    return torch.softmax(scores, dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, num_hiddens, num_heads, bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def fold(self, X):  # (B, n, D) -> (B * H, n, D / H)
        X = X.reshape(X.size(0), X.size(1), self.num_heads, -1).permute(0, 2, 1, 3)
        return X.reshape(-1, X.size(2), X.size(3))

    def unfold(self, X):  # (B * H, n, D / H) -> (B, n, D)
        X = X.reshape(-1, self.num_heads, X.size(1), X.size(2)).permute(0, 2, 1, 3)
        return X.reshape(X.size(0), X.size(1), -1)

    def forward(self, queries, keys, values, valid_lens):
        q = self.fold(self.W_q(queries))  # (B * H, n, D / H)
        k, v = self.fold(self.W_k(keys)), self.fold(self.W_v(values))
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
        scores = q @ k.transpose(1, 2) / math.sqrt(q.size(-1))  # (B * H, n, m)
        return self.W_o(self.unfold(masked_softmax(scores, valid_lens) @ v))


MyMultiHead = MultiHeadAttention
