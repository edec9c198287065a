"""The right formula with another base: 1e6, where the model (and the checker's default)
uses 10000. The checker names the base it recovers."""

import torch

EXPECTED = {"rope-base"}


def rope(x, positions):
    Dh = x.size(-1)
    inv_freq = 1e6 ** (-torch.arange(0, Dh, 2, device=x.device) / Dh)
    angle = positions[:, None] * inv_freq
    angle = torch.cat([angle, angle], dim=-1)
    x1, x2 = x.chunk(2, dim=-1)
    return x * angle.cos() + torch.cat([-x2, x1], dim=-1) * angle.sin()
