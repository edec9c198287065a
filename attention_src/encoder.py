"""The Transformer encoder: embedding, positions, and N identical layers of
self-attention + feed-forward, each wrapped in a residual connection and LayerNorm."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_ndim, check_positive_int, check_tensor, shape_str
from .feed_forward import FeedForward
from .multi_head import MultiHeadAttention
from .positional import PositionalEncoding

__all__ = ["EncoderLayer", "Encoder"]


# --8<-- [start:encoder_layer]
class EncoderLayer(nn.Module):
    """One encoder layer; returns ``(output (B, L, D), weights (B, H, L, L))``.

    Post-norm (``norm_first=False``, the 2017 paper)::

        x = norm1(x + dropout(self_attn(x)))
        x = norm2(x + dropout(ff(x)))

    Pre-norm (``norm_first=True``)::

        x = x + dropout(self_attn(norm1(x)))
        x = x + dropout(ff(norm2(x)))
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        activation: str = "relu",
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
        bias: bool = True,
    ):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=bias)
        self.ff = FeedForward(d_model, d_ff, dropout=dropout, activation=activation, bias=bias)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None):
        if self.norm_first:
            attn, weights = self.self_attn(self.norm1(x), mask=mask)
            x = x + self.dropout1(attn)
            x = x + self.dropout2(self.ff(self.norm2(x)))
        else:
            attn, weights = self.self_attn(x, mask=mask)
            x = self.norm1(x + self.dropout1(attn))
            x = self.norm2(x + self.dropout2(self.ff(x)))
        return x, weights

    # --8<-- [end:encoder_layer]

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> EncoderLayer:
        """An ``EncoderLayer`` with the same weights and settings as ``layer``
        (relu or gelu, post- or pre-norm, with or without bias)."""
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise TypeError(
                f"layer must be an nn.TransformerEncoderLayer, got {type(layer).__name__}"
            )
        act = layer.activation
        if act is F.relu or isinstance(act, nn.ReLU):
            activation = "relu"
        elif act is F.gelu or (isinstance(act, nn.GELU) and act.approximate == "none"):
            activation = "gelu"
        else:
            raise ValueError(f"unsupported activation {act!r}; expected relu or gelu")
        has_bias = layer.linear1.bias is not None
        ours = cls(
            layer.self_attn.embed_dim,
            layer.self_attn.num_heads,
            layer.linear1.out_features,
            dropout=layer.dropout.p,
            activation=activation,
            norm_first=layer.norm_first,
            layer_norm_eps=layer.norm1.eps,
            bias=has_bias,
        )
        ref = layer.linear1.weight
        ours.to(device=ref.device, dtype=ref.dtype)  # before loading: no float32 round trip
        ours.self_attn = MultiHeadAttention.from_torch(layer.self_attn)
        ours.ff.linear1.load_state_dict(layer.linear1.state_dict())
        ours.ff.linear2.load_state_dict(layer.linear2.state_dict())
        ours.norm1.load_state_dict(layer.norm1.state_dict())
        ours.norm2.load_state_dict(layer.norm2.state_dict())
        return ours.train(layer.training)


# --8<-- [start:encoder]
class Encoder(nn.Module):
    """Token ids ``(B, L)`` -> ``(output (B, L, D), [weights (B, H, L, L) per layer])``.

    Embedding scaled by sqrt(D), sinusoidal positions, ``num_layers`` encoder
    layers; a pre-norm stack (``norm_first=True``) ends with a final LayerNorm,
    because its last layer's output has not been normalised.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        num_heads: int,
        num_layers: int,
        d_ff: int,
        dropout: float = 0.1,
        max_len: int = 5000,
        norm_first: bool = False,
        activation: str = "relu",
    ):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("num_layers", num_layers)
        self.vocab_size, self.d_model = vocab_size, d_model
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.positional = PositionalEncoding(d_model, max_len=max_len, dropout=dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(
                d_model,
                num_heads,
                d_ff,
                dropout=dropout,
                activation=activation,
                norm_first=norm_first,
            )
            for _ in range(num_layers)
        )
        self.final_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None):
        self._check_tokens(tokens)
        x = self.embedding(tokens) * math.sqrt(self.d_model)  # (B, L, D)
        x = self.positional(x)  # (B, L, D)
        all_weights = []
        for layer in self.layers:
            x, weights = layer(x, mask=mask)  # weights: (B, H, L, L)
            all_weights.append(weights)
        return self.final_norm(x), all_weights

    # --8<-- [end:encoder]

    def _check_tokens(self, tokens) -> None:
        check_tensor("tokens", tokens)
        if tokens.is_floating_point() or tokens.dtype == torch.bool:
            raise TypeError(
                f"tokens must be integer token ids (torch.long), got dtype {tokens.dtype}; "
                "an Encoder embeds ids itself, so pass ids, not vectors"
            )
        check_ndim("tokens", tokens, 2, "(B, L)")
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= self.vocab_size):
            raise ValueError(
                f"token ids must be in [0, {self.vocab_size}), got values from "
                f"{int(tokens.min())} to {int(tokens.max())} "
                f"(tokens shape {shape_str(tokens.shape)})"
            )
