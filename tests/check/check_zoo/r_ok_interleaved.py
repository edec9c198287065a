"""Correct: RoPE in the interleaved layout, pairs (2i, 2i + 1), as in the RoFormer paper:
the even and odd features turn together, in real arithmetic."""

import torch

EXPECTED: set[str] = set()


def rope(x, positions):
    Dh = x.size(-1)
    theta = 10000.0 ** (-2 * torch.arange(Dh // 2, device=x.device) / Dh)  # (Dh/2,)
    angle = positions[:, None].to(x.dtype) * theta  # (L, Dh/2)
    cos, sin = angle.cos(), angle.sin()
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., L, Dh/2) each
    out = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return out.flatten(-2)  # (..., L, Dh): pairs back in place
