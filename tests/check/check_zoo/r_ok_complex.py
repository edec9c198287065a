"""Correct: RoPE with complex numbers, as Meta's reference Llama writes it: each pair
(2i, 2i + 1) is one complex number, multiplied by e^(i p theta_i)."""

import torch

EXPECTED: set[str] = set()


def rope(x, positions):
    Dh = x.size(-1)
    freqs = 1.0 / (10000.0 ** (torch.arange(0, Dh, 2, device=x.device)[: Dh // 2] / Dh))
    freqs_cis = torch.polar(
        torch.ones(len(positions), Dh // 2, device=x.device), torch.outer(positions.float(), freqs)
    )  # (L, Dh/2), complex
    x_c = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(x_c * freqs_cis).flatten(-2).type_as(x)
