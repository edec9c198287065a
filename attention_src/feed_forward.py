"""The position-wise feed-forward network: the same two-layer MLP applied to
every token on its own, FFN(x) = W2 act(W1 x + b1) + b2."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .validate import check_positive_int, check_probability

__all__ = ["FeedForward"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _check_activation(activation) -> None:
    """``activation`` is the name of one of ``_ACTIVATIONS``."""
    if not isinstance(activation, str):
        raise TypeError(
            f"activation must be the name of one of {sorted(_ACTIVATIONS)}, "
            f"got {type(activation).__name__} {activation!r}"
        )
    if activation not in _ACTIVATIONS:
        raise ValueError(
            f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}"
        )


# --8<-- [start:feed_forward]
class FeedForward(nn.Module):
    """``(B, L, D) -> (B, L, D)`` through a hidden width ``d_ff`` (usually 4 D).

    Args:
        d_model: D.
        d_ff: the hidden width.
        dropout: applied after the activation, during training.
        activation: ``"relu"`` or ``"gelu"``.
        bias: whether the two linear layers have a bias.
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        dropout: float = 0.0,
        activation: str = "relu",
        bias: bool = True,
    ):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        check_probability("dropout", dropout)
        _check_activation(activation)
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)  # D -> d_ff
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)  # d_ff -> D

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = _ACTIVATIONS[self.activation](self.linear1(x))  # (B, L, d_ff)
        return self.linear2(self.dropout(hidden))  # (B, L, D)


# --8<-- [end:feed_forward]
