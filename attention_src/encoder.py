"""The Transformer encoder: embedding, positions, and N identical layers of
self-attention + feed-forward, each wrapped in a residual connection and
LayerNorm."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .feed_forward import FeedForward
from .multi_head import MultiHeadAttention
from .positional import PositionalEncoding
from .validate import check_positive_int, check_token_ids, shape_str

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
        self.d_model, self.norm_first = d_model, norm_first
        self.self_attn = MultiHeadAttention(
            d_model, num_heads, dropout=dropout, bias=bias
        )
        self.ff = FeedForward(
            d_model, d_ff, dropout=dropout, activation=activation, bias=bias
        )
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None):
        self._check_mask_argument(mask)
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

    def _check_mask_argument(self, mask) -> None:
        """A sequence passed where the mask goes: say what this layer takes."""
        if (
            isinstance(mask, torch.Tensor)
            and mask.is_floating_point()
            and mask.dim() == 3
            and mask.size(-1) == self.d_model
        ):
            raise TypeError(
                "the second argument of EncoderLayer.forward is the mask, got a "
                f"float tensor of shape {shape_str(mask.shape)}, which looks like "
                "a sequence (B, S, D); an encoder layer attends within x only "
                "(self-attention) and takes no second sequence: call "
                "layer(x) or layer(x, mask)"
            )

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> EncoderLayer:
        """An ``EncoderLayer`` with the same weights and settings as ``layer``
        (relu or gelu, post- or pre-norm, with or without bias)."""
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise TypeError(
                "layer must be an nn.TransformerEncoderLayer, got "
                f"{type(layer).__name__}"
            )
        activation = _activation_name(layer)
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
        # before loading: no float32 round trip
        ours.to(device=ref.device, dtype=ref.dtype)
        ours.self_attn = MultiHeadAttention.from_torch(layer.self_attn)
        ours.ff.linear1.load_state_dict(layer.linear1.state_dict())
        ours.ff.linear2.load_state_dict(layer.linear2.state_dict())
        ours.norm1.load_state_dict(layer.norm1.state_dict())
        ours.norm2.load_state_dict(layer.norm2.state_dict())
        return ours.train(layer.training)


# --8<-- [start:encoder]
class Encoder(nn.Module):
    """Token ids ``(B, L)`` ->
    ``(output (B, L, D), [weights (B, H, L, L) per layer])``.

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
        self.positional = PositionalEncoding(
            d_model, max_len=max_len, dropout=dropout
        )
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
        hint = "; an Encoder embeds ids itself, so pass ids, not vectors"
        check_token_ids("tokens", tokens, self.vocab_size, hint=hint)

    @classmethod
    def from_torch(
        cls,
        stack: nn.TransformerEncoder,
        embedding: nn.Embedding,
        *,
        max_len: int = 5000,
    ) -> Encoder:
        """An ``Encoder`` that computes what ``embedding``, the sinusoidal positions
        and ``stack`` compute together (in eval mode)::

            x = embedding(tokens) * sqrt(D) + sinusoidal_positional_encoding(L, D)
            stack(x, src_key_padding_mask=...)   # batch_first=True layers

        Every layer is copied with ``EncoderLayer.from_torch``. The final
        norm is a copy of ``stack.norm`` (nn.TransformerEncoder's ``norm``
        argument), or nothing when the stack has none. PyTorch has no
        positional encoding, so the positional dropout (the layers' dropout
        rate) has no counterpart there: compare the two in eval mode.
        """
        if not isinstance(stack, nn.TransformerEncoder):
            raise TypeError(
                "stack must be an nn.TransformerEncoder, got "
                f"{type(stack).__name__}"
            )
        if not isinstance(embedding, nn.Embedding):
            raise TypeError(
                f"embedding must be an nn.Embedding, got {type(embedding).__name__}"
            )
        first = stack.layers[0]
        if embedding.embedding_dim != first.self_attn.embed_dim:
            raise ValueError(
                f"embedding width {embedding.embedding_dim} does not match the "
                f"layers' d_model={first.self_attn.embed_dim}"
            )
        if stack.norm is not None and not isinstance(stack.norm, nn.LayerNorm):
            raise TypeError(
                "stack.norm must be an nn.LayerNorm or None, got "
                f"{type(stack.norm).__name__}"
            )
        ours = cls(
            embedding.num_embeddings,
            embedding.embedding_dim,
            first.self_attn.num_heads,
            len(stack.layers),
            first.linear1.out_features,
            dropout=first.dropout.p,
            max_len=max_len,
            norm_first=first.norm_first,
        )
        ref = embedding.weight
        # before loading: no float32 round trip
        ours.to(device=ref.device, dtype=ref.dtype)
        ours.embedding.load_state_dict(embedding.state_dict())
        ours.embedding.padding_idx = embedding.padding_idx
        ours.layers = nn.ModuleList(
            EncoderLayer.from_torch(layer) for layer in stack.layers
        )
        if stack.norm is None:
            ours.final_norm = nn.Identity()
        else:
            norm = stack.norm
            ours.final_norm = nn.LayerNorm(
                norm.normalized_shape,
                eps=norm.eps,
                elementwise_affine=norm.elementwise_affine,
                bias=norm.bias is not None,
                device=ref.device,
                dtype=ref.dtype,
            )
            ours.final_norm.load_state_dict(norm.state_dict())
        return ours.train(stack.training)


def _activation_name(layer: nn.Module) -> str:
    """``"relu"`` or ``"gelu"``: the activation of a PyTorch Transformer layer."""
    act = layer.activation
    if act is F.relu or isinstance(act, nn.ReLU):
        return "relu"
    if act is F.gelu or (isinstance(act, nn.GELU) and act.approximate == "none"):
        return "gelu"
    raise ValueError(f"unsupported activation {act!r}; expected relu or gelu")
