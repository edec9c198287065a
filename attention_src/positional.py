"""Sinusoidal positional encoding (Vaswani et al., 2017).

PE[p, 2i]   = sin(p / 10000^(2i / D))
PE[p, 2i+1] = cos(p / 10000^(2i / D))

Self-attention is blind to order; adding PE to the token embeddings gives
each position a distinct, smoothly varying signature.

Also here: the rotation that shifts the sinusoidal table by ``k`` positions, and
learned position embeddings (the alternative, with a hard length limit). The
chapter's one-layer tagger and its "previous token" task are an experiment:
``attention_src.experiments.tagger``.
"""

from __future__ import annotations

import torch
from torch import nn

from .validate import (
    check_floating,
    check_ndim,
    check_positive_int,
    check_probability,
    shape_str,
)

__all__ = [
    "sinusoidal_positional_encoding",
    "PositionalEncoding",
    "sinusoidal_shift_matrix",
    "LearnedPositionalEmbedding",
]


# --8<-- [start:sinusoidal]
def sinusoidal_positional_encoding(
    max_len: int, d_model: int, *, device=None, dtype=torch.float32
) -> torch.Tensor:
    """The table ``PE`` of shape ``(max_len, d_model)``; odd ``d_model`` works
    too."""
    check_positive_int("max_len", max_len)
    check_positive_int("d_model", d_model)
    # (P, 1)
    position = torch.arange(max_len, device=device, dtype=torch.float64)[:, None]
    # (ceil(D/2),)
    two_i = torch.arange(0, d_model, 2, device=device, dtype=torch.float64)
    angle = position / (10000.0 ** (two_i / d_model))  # (P, ceil(D/2))
    pe = torch.zeros(max_len, d_model, device=device, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)  # even features: ceil(D/2) columns
    # odd features: floor(D/2) columns
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
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
        self._check_input(x)
        L = x.shape[1]
        return self.dropout(x + self.pe[:L].to(x.dtype))  # (B, L, D)

    # --8<-- [end:positional_encoding]

    def _check_input(self, x) -> None:
        """The checks of ``forward``: ``x`` is ``(B, L, D)``, ``L <= max_len``."""
        _check_sequence(x, self.d_model)
        L = x.shape[1]
        if L > self.max_len:
            raise ValueError(
                f"sequence length {L} exceeds max_len={self.max_len} of the "
                f"positional table; build PositionalEncoding with max_len >= {L}"
            )


def _check_shift(k, d_model) -> None:
    """``sinusoidal_shift_matrix``'s arguments: an int ``k`` and an even
    ``d_model``."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be an int, got {type(k).__name__} {k!r}")
    check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(
            f"d_model must be even for a shift matrix, got {d_model}: the last "
            "sine feature of an odd d_model has no cosine partner to rotate with"
        )


# --8<-- [start:shift_matrix]
def sinusoidal_shift_matrix(
    k: int, d_model: int, *, device=None, dtype=torch.float32
) -> torch.Tensor:
    """``M_k`` ``(D, D)``: ``PE[p + k] = PE[p] @ M_k.T`` for every position ``p``.

    Block-diagonal: features ``(2i, 2i+1)`` = ``(sin, cos)`` of the angle
    ``p * w_i`` are rotated by the angle ``k * w_i``. ``k`` may be negative
    (a shift back). Needs an even ``d_model``: with an odd one the last sine
    feature has no cosine partner.
    """
    _check_shift(k, d_model)
    # (D/2,)
    two_i = torch.arange(0, d_model, 2, device=device, dtype=torch.float64)
    angle = k / (10000.0 ** (two_i / d_model))  # (D/2,): k * w_i
    cos, sin = torch.cos(angle), torch.sin(angle)
    s, c = two_i.long(), two_i.long() + 1  # each pair's sine and cosine feature
    m = torch.zeros(d_model, d_model, device=device, dtype=torch.float64)  # (D, D)
    m[s, s], m[s, c] = cos, sin  # sin(a + b) = sin a cos b + cos a sin b
    m[c, s], m[c, c] = -sin, cos  # cos(a + b) = cos a cos b - sin a sin b
    return m.to(dtype)


# --8<-- [end:shift_matrix]


# --8<-- [start:learned]
class LearnedPositionalEmbedding(nn.Module):
    """Adds a trained vector per position to ``x`` ``(B, L, D)``, then dropout.

    The table is an ``nn.Embedding(max_len, d_model)``: ``max_len * d_model``
    parameters, trained with the rest of the model. Raises ``ValueError`` for a
    sequence longer than ``max_len``: those positions have no vector.
    """

    def __init__(self, d_model: int, max_len: int, dropout: float = 0.0):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("max_len", max_len)
        check_probability("dropout", dropout)
        self.d_model, self.max_len = d_model, max_len
        # (max_len, D): a row per position
        self.embedding = nn.Embedding(max_len, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check_input(x)
        L = x.shape[1]
        positions = torch.arange(L, device=x.device)  # (L,) = 0, 1, ..., L - 1
        return self.dropout(x + self.embedding(positions).to(x.dtype))  # (B, L, D)

    # --8<-- [end:learned]

    def _check_input(self, x) -> None:
        """The checks of ``forward``: ``x`` is ``(B, L, D)``, ``L <= max_len``."""
        _check_sequence(x, self.d_model)
        L = x.shape[1]
        if L > self.max_len:
            raise ValueError(
                f"sequence length {L} exceeds max_len={self.max_len} of the "
                f"learned position table: positions {self.max_len}..{L - 1} have "
                "no vector, and a larger table would give them vectors that were "
                "never trained"
            )


def _check_sequence(x, d_model: int) -> None:
    check_floating("x", x)
    check_ndim("x", x, 3, "(B, L, D)")
    if x.shape[2] != d_model:
        raise ValueError(
            f"x has {x.shape[2]} features, expected d_model={d_model} "
            f"(x shape {shape_str(x.shape)})"
        )
