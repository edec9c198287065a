"""The frequencies with exponent i/Dh over the Dh/2 pairs, where 2i/Dh was meant: they
fall only to 1/sqrt(base), as if the base were 100, so distant positions are told apart
less well."""

import torch

EXPECTED = {"rope-exponent"}


def rope(x, positions):
    Dh = x.size(-1)
    inv_freq = 10000 ** (-torch.arange(Dh // 2, device=x.device) / Dh)  # BUG: 2i/Dh
    angle = positions[:, None] * inv_freq
    angle = torch.cat([angle, angle], dim=-1)
    x1, x2 = x.chunk(2, dim=-1)
    return x * angle.cos() + torch.cat([-x2, x1], dim=-1) * angle.sin()
