"""Interleaved pairs (2i, 2i + 1) turned by angles laid out for rotate-half,
torch.cat([angle, angle]): the two features of a pair get different angles. It happens when
code of one layout is mixed with cos/sin tables (or weights) made for the other."""

import torch

EXPECTED = {"rope-layout-mix"}


def rope(x, positions):
    Dh = x.size(-1)
    inv_freq = 10000 ** (-torch.arange(0, Dh, 2, device=x.device) / Dh)
    angle = positions[:, None] * inv_freq
    angle = torch.cat([angle, angle], dim=-1)  # BUG: interleaved pairs need repeat_interleave
    turned = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
    return x * angle.cos() + turned * angle.sin()
