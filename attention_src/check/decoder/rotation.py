"""Reading a rotation: RoPE is linear in ``x`` at each position, so its output
for the unit vectors is the matrix ``R_p`` it applies at every position
``p``. From those matrices: which features turn together (the pairing
layout), by which angle at each position, which positions and frequencies
explain the angles, and the base the frequencies follow. ``reference_rope``
is RoPE itself, in either layout."""

from __future__ import annotations

import math

import torch

from ...rope import rope_angles, rotate_half

__all__ = [
    "TOL", "reference_rope", "layout_of", "angles_of", "explain_angles", "fit_base",
]  # fmt: skip

TOL = 1e-3  # radians, and for the outputs


def reference_rope(x, positions, *, base=10000.0, layout="half"):
    """RoPE of ``x`` ``(..., L, Dh)`` at integer ``positions`` ``(L,)``, in
    either layout: ``"half"`` pairs ``(i, i + Dh/2)``, ``"interleaved"``
    pairs ``(2i, 2i + 1)``; both turn pair ``i`` by ``p * base**(-2i/Dh)``."""
    cos, sin = rope_angles(positions, x.size(-1), base, dtype=x.dtype)
    if layout == "half":
        return x * cos + rotate_half(x) * sin
    order = _interleave_order(x.size(-1), x.device)  # feature -> its half slot
    y = x[..., order]  # interleaved pairs moved to (i, i + Dh/2)
    y = y * cos + rotate_half(y) * sin
    return y[..., torch.argsort(order)]


def _interleave_order(dh: int, device) -> torch.Tensor:
    return torch.cat([torch.arange(0, dh, 2), torch.arange(1, dh, 2)]).to(device)


def _partners(dh: int, layout: str) -> list[int]:
    if layout == "half":
        return [(j + dh // 2) % dh for j in range(dh)]
    return [j ^ 1 for j in range(dh)]


def _pair_index(dh: int, layout: str) -> list[int]:
    """The frequency index of each feature under ``layout``'s angles."""
    return [j % (dh // 2) if layout == "half" else j // 2 for j in range(dh)]


def _lower(j: int, dh: int, layout: str) -> bool:
    return j < dh // 2 if layout == "half" else j % 2 == 0


def _wrap(a: torch.Tensor) -> torch.Tensor:
    return torch.remainder(a + math.pi, 2 * math.pi) - math.pi


def layout_of(mats: torch.Tensor) -> str | None:
    """The pairing that the matrices ``(L, Dh, Dh)`` show, or None."""
    dh = mats.size(-1)
    off = mats.abs().sum(0)  # (Dh, Dh): out feature x in feature
    off.fill_diagonal_(0)
    if off.max() < TOL:
        return None
    for layout in ("half", "interleaved"):
        partner = _partners(dh, layout)
        outside = off.clone()
        outside[range(dh), partner] = 0
        if outside.max() < TOL:
            return layout
    return None


def angles_of(mats: torch.Tensor, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(L, Dh)`` twice: the angle each output feature turns by at each row,
    and ``cos² + sin²`` of it (1 for a rotation)."""
    dh = mats.size(-1)
    partner = _partners(dh, layout)
    j = list(range(dh))
    c = mats[:, j, j]
    s = mats[:, j, partner] * torch.tensor(
        [-1.0 if _lower(i, dh, layout) else 1.0 for i in j], device=mats.device
    )
    return torch.atan2(s, c), c * c + s * s


def explain_angles(angles, positions, dh):
    """(angle layout, frequencies (Dh/2,), positions used) or None."""
    given = positions.to(angles.dtype)
    ignored = torch.arange(len(positions), dtype=angles.dtype, device=angles.device)
    for used, pos in (("given", given), ("ignored", ignored)):
        row = int((pos == 1).nonzero()[0])  # the row at position 1
        for layout in ("half", "interleaved"):
            index = torch.tensor(_pair_index(dh, layout), device=angles.device)
            freq = torch.zeros(dh // 2, dtype=angles.dtype, device=angles.device)
            freq[index] = angles[row]  # the last writer wins; checked below
            predicted = pos[:, None] * freq[index]  # (L, Dh)
            if _wrap(predicted - angles).abs().max() < TOL:
                return layout, freq, used
    return None


def fit_base(freq: torch.Tensor, dh: int) -> float | None:
    """``b`` with ``freq[i] == b ** (-2i / Dh)`` for every ``i``, or None."""
    if abs(float(freq[0]) - 1) > TOL or (freq[1:] <= 0).any():
        return None
    i = torch.arange(1, dh // 2, dtype=freq.dtype, device=freq.device)
    log_b = float((-freq[1:].log() * dh / (2 * i)).mean())
    fitted = torch.exp(-2 * torch.arange(dh // 2, device=freq.device) / dh * log_b)
    if (fitted - freq).abs().max() > TOL:
        return None
    return math.exp(log_b)
