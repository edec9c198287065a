"""Correct: RoPE with base 500000 (Llama 3's), checked with --base 500000."""

import torch

EXPECTED: set[str] = set()
OPTIONS = {"base": 500000.0}


def rope(x, positions, base=500000.0):
    Dh = x.size(-1)
    inv_freq = base ** (-torch.arange(0, Dh, 2, device=x.device) / Dh)
    angle = positions[:, None] * inv_freq
    cos, sin = angle.cos().repeat(1, 2), angle.sin().repeat(1, 2)  # (L, Dh)
    half = Dh // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin
