"""Correct: RoPE in the rotate-half layout, pairs (i, i + Dh/2), written out as transformers'
Llama and GPT-NeoX do: the angles repeated twice, then x cos + rotate_half(x) sin."""

import torch

EXPECTED: set[str] = set()


def rope(x, positions):
    Dh = x.size(-1)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, Dh, 2, device=x.device).float() / Dh))
    angle = positions.float()[:, None] * inv_freq  # (L, Dh/2)
    emb = torch.cat([angle, angle], dim=-1)  # (L, Dh)
    x1, x2 = x[..., : Dh // 2], x[..., Dh // 2 :]
    rotated = torch.cat([-x2, x1], dim=-1)
    return x * emb.cos() + rotated * emb.sin()
