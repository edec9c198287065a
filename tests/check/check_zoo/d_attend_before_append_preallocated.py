"""A cache preallocated for 32 positions with a pointer to the next free one (one attention
layer, RoPE with complex numbers) that reads, attends, then writes: a cached step attends
over the positions before the pointer and writes its own key and value after, so the new
token never sees itself. The prompt (the first call) attends over its own keys and is
right."""

import math

import torch
from torch import nn

EXPECTED = {"decode-attend-before-append"}


class CachedLayer(nn.Module):
    def __init__(self, d_model=16, num_heads=2, max_len=32):
        super().__init__()
        self.num_heads, self.max_len = num_heads, max_len
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def new_cache(self, batch):
        Dh = self.q_proj.out_features // self.num_heads
        empty = torch.zeros(batch, self.num_heads, self.max_len, Dh)
        return {"k": empty, "v": empty.clone(), "next": 0}

    def rope(self, x, start):
        """Turn pairs (2i, 2i + 1) of x (B, H, T, Dh) as complex numbers."""
        T, Dh = x.shape[-2:]
        freq = 10000 ** (-torch.arange(0, Dh, 2) / Dh)  # (Dh/2,)
        angle = torch.arange(start, start + T)[:, None] * freq  # (T, Dh/2)
        pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], Dh // 2, 2))
        return torch.view_as_real(pairs * torch.polar(torch.ones_like(angle), angle)).flatten(-2)

    def forward(self, x, cache):
        B, T, D = x.shape
        q, k, v = (
            p(x).view(B, T, self.num_heads, -1).transpose(1, 2)
            for p in (self.q_proj, self.k_proj, self.v_proj)
        )
        start = cache["next"]
        q, k = self.rope(q, start), self.rope(k, start)
        if start == 0:  # the prompt: attention over its own keys
            keys, values = k, v
        else:  # BUG: reads the cache before this step's keys are written into it
            keys, values = cache["k"][:, :, :start], cache["v"][:, :, :start]
        S = keys.size(-2)
        scores = q @ keys.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, T, S)
        query_pos = torch.arange(S - T, S)[:, None] if start == 0 else S
        scores = scores.masked_fill(torch.arange(S) > query_pos, float("-inf"))
        y = scores.softmax(dim=-1) @ values  # (B, H, T, Dh)
        cache["k"][:, :, start : start + T] = k  # written in place, after attending
        cache["v"][:, :, start : start + T] = v
        cache["next"] = start + T
        return self.o_proj(y.transpose(1, 2).reshape(B, T, D))


torch.manual_seed(0)
table = nn.Embedding(10, 16)
layer = CachedLayer().eval()


@torch.no_grad()
def decode(tokens, cache):
    if cache is None:
        cache = layer.new_cache(tokens.size(0))
    return layer(table(tokens), cache), cache
