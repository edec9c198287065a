"""The positions argument is ignored: row i is turned by the angle of position i. Right for a
prompt read from position 0; wrong for every token decoded after a cache."""

import torch

EXPECTED = {"rope-positions-ignored"}


def rope(x, positions):
    L, Dh = x.shape[-2:]
    positions = torch.arange(L, device=x.device)  # BUG: overwrites the argument
    inv_freq = 10000 ** (-torch.arange(0, Dh, 2, device=x.device) / Dh)
    angle = positions[:, None] * inv_freq
    angle = torch.cat([angle, angle], dim=-1)
    x1, x2 = x.chunk(2, dim=-1)
    return x * angle.cos() + torch.cat([-x2, x1], dim=-1) * angle.sin()
