"""A sliding window of 4 in the mask, so every output is right, but the cache keeps every
token: its memory grows without bound where the window says it need not."""

import torch
import torch.nn.functional as F
from torch import nn

EXPECTED = {"decode-cache-unbounded"}
OPTIONS = {"window": 4}
WINDOW = 4


def rotate(x, start):
    """RoPE, rotate-half layout, for positions start .. start + T - 1 of x (B, H, T, Dh)."""
    Dh = x.size(-1)
    pos = torch.arange(start, start + x.size(-2), device=x.device)
    angle = pos[:, None] * 10000 ** (-torch.arange(0, Dh, 2, device=x.device) / Dh)
    angle = torch.cat([angle, angle], dim=-1)  # (T, Dh)
    x1, x2 = x.chunk(2, dim=-1)
    return x * angle.cos() + torch.cat([-x2, x1], dim=-1) * angle.sin()


class Layer(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, past=None):
        B, T, D = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv  # each (B, H, T, Dh)
        start = 0 if past is None else past[0].size(-2)  # tokens already cached
        q, k = rotate(q, start), rotate(k, start)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=-2), torch.cat([past[1], v], dim=-2)
        S = k.size(-2)
        i = torch.arange(S - T, S, device=x.device)[:, None]  # the new queries
        j = torch.arange(S, device=x.device)[None, :]  # the keys, oldest first
        mask = (j <= i) & (j > i - WINDOW)  # itself and the WINDOW - 1 before it
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, T, Dh)
        return x + self.out(y.transpose(1, 2).reshape(B, T, D)), (k, v)


class TinyLM(nn.Module):
    def __init__(self, vocab=10, d_model=16, num_heads=2, num_layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList(Layer(d_model, num_heads) for _ in range(num_layers))
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens, past=None, use_cache=False):
        x, new = self.embed(tokens), []
        for i, layer in enumerate(self.layers):
            x, kv = layer(x, None if past is None else past[i])
            new.append(kv)
        return self.head(x), (new if use_cache else None)


torch.manual_seed(0)
model = TinyLM().eval()


def decode(tokens, cache):
    return model(tokens, past=cache, use_cache=True)
