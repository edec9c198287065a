"""Sinusoidal positional encoding (Vaswani et al., 2017).

PE[p, 2i]   = sin(p / 10000^(2i / D))
PE[p, 2i+1] = cos(p / 10000^(2i / D))

Self-attention is blind to order; adding PE to the token embeddings gives
each position a distinct, smoothly varying signature.
"""

from __future__ import annotations

import torch
from torch import nn

from ._checks import check_floating, check_ndim, check_positive_int, check_probability, shape_str

__all__ = ["sinusoidal_positional_encoding", "PositionalEncoding"]


# --8<-- [start:sinusoidal]
def sinusoidal_positional_encoding(
    max_len: int, d_model: int, *, device=None, dtype=torch.float32
) -> torch.Tensor:
    """The table ``PE`` of shape ``(max_len, d_model)``; odd ``d_model`` works too."""
    check_positive_int("max_len", max_len)
    check_positive_int("d_model", d_model)
    position = torch.arange(max_len, device=device, dtype=torch.float64)[:, None]  # (P, 1)
    two_i = torch.arange(0, d_model, 2, device=device, dtype=torch.float64)  # (ceil(D/2),)
    angle = position / (10000.0 ** (two_i / d_model))  # (P, ceil(D/2))
    pe = torch.zeros(max_len, d_model, device=device, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)  # even features: ceil(D/2) columns
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # odd features: floor(D/2) columns
    return pe.to(dtype)


# --8<-- [end:sinusoidal]


# --8<-- [start:positional_encoding]
class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to ``x`` of shape ``(B, L, D)``, then dropout.

    Raises ``ValueError`` for a sequence longer than ``max_len``.
    """

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.0):
        super().__init__()
        check_probability("dropout", dropout)
        self.d_model, self.max_len = d_model, max_len
        self.register_buffer(
            "pe", sinusoidal_positional_encoding(max_len, d_model), persistent=False
        )  # (max_len, D)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_floating("x", x)
        check_ndim("x", x, 3, "(B, L, D)")
        L, D = x.shape[1], x.shape[2]
        if D != self.d_model:
            raise ValueError(
                f"x has {D} features, expected d_model={self.d_model} "
                f"(x shape {shape_str(x.shape)})"
            )
        if L > self.max_len:
            raise ValueError(
                f"sequence length {L} exceeds max_len={self.max_len} of the positional "
                f"table; build PositionalEncoding with max_len >= {L}"
            )
        return self.dropout(x + self.pe[:L].to(x.dtype))  # (B, L, D)


# --8<-- [end:positional_encoding]
