"""A sliding window of 2 whose cached steps rotate the kept keys again: RoPE is applied to
the window of keys after the new one is appended, and the cached ones were stored already
rotated. The window itself is right (the band mask, the last 2 keys kept), so only the
rotation is wrong; with W = 2 it first shows at step 2, where a window off by one would
show too."""

import torch
import torch.nn.functional as F
from torch import nn

EXPECTED = {"decode-rope-twice"}
OPTIONS = {"window": 2}
WINDOW = 2


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
        start = 0 if past is None else past[2]  # tokens read so far
        q = rotate(q, start)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=-2), torch.cat([past[1], v], dim=-2)
        S = k.size(-2)
        k = rotate(k, start + T - S)  # BUG: the kept keys, already rotated, are rotated again
        i = torch.arange(S - T, S, device=x.device)[:, None]  # the new queries
        j = torch.arange(S, device=x.device)[None, :]  # the keys, oldest first
        mask = (j <= i) & (j > i - WINDOW)  # itself and the WINDOW - 1 before it
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, T, Dh)
        kept = (k[:, :, -WINDOW:], v[:, :, -WINDOW:], start + T)  # and the count
        return x + self.out(y.transpose(1, 2).reshape(B, T, D)), kept


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
