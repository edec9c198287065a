"""The encoder–decoder Transformer: an encoder reads the source, and a decoder
writes the target with three sub-layers per layer -- masked self-attention
over the target so far, cross-attention from the target to the encoder's
output (the *memory*), and a feed-forward network -- each with a residual
connection and a LayerNorm.

Shapes: B batch, H heads, L target (query) length, S source (key) length,
D model width, V vocabulary size.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .encoder import Encoder, _activation_name
from .feed_forward import FeedForward
from .masks import causal_mask
from .multi_head import MultiHeadAttention
from .positional import PositionalEncoding
from .seq2seq import BOS
from .validate import (
    check_mask,
    check_positive_int,
    check_token_ids,
    check_vectors,
    shape_str,
)

__all__ = ["DecoderLayer", "EncoderDecoder"]


# --8<-- [start:decoder_layer]
class DecoderLayer(nn.Module):
    """One decoder layer: ``forward(x, memory, self_mask=None, memory_mask=None)``
    returns ``(output (B, L, D), self weights (B, H, L, L), cross weights
    (B, H, L, S))``.

    ``x`` is the target so far ``(B, L, D)``, ``memory`` the encoder's output
    ``(B, S, D)``. ``self_mask`` (usually ``causal_mask(L)``) and ``memory_mask``
    (usually the source's ``padding_mask``) are bool, True = may attend.

    Post-norm (``norm_first=False``, the 2017 paper)::

        x = norm1(x + dropout(self_attn(x)))
        x = norm2(x + dropout(cross_attn(x, context=memory)))
        x = norm3(x + dropout(ff(x)))

    Pre-norm (``norm_first=True``)::

        x = x + dropout(self_attn(norm1(x)))
        x = x + dropout(cross_attn(norm2(x), context=memory))
        x = x + dropout(ff(norm3(x)))
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
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout, bias)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout, bias)
        self.ff = FeedForward(d_model, d_ff, dropout, activation, bias)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ):
        self._check_inputs(x, memory, memory_mask)
        if self.norm_first:
            attn, self_w = self.self_attn(self.norm1(x), mask=self_mask)
            x = x + self.dropout1(attn)  # (B, L, D)
            crossed, cross_w = self.cross_attn(
                self.norm2(x), mask=memory_mask, context=memory
            )  # queries from the target, keys and values from the memory
            x = x + self.dropout2(crossed)  # (B, L, D)
            x = x + self.dropout3(self.ff(self.norm3(x)))
        else:
            attn, self_w = self.self_attn(x, mask=self_mask)
            x = self.norm1(x + self.dropout1(attn))  # (B, L, D)
            crossed, cross_w = self.cross_attn(
                x, mask=memory_mask, context=memory
            )  # queries from the target, keys and values from the memory
            x = self.norm2(x + self.dropout2(crossed))  # (B, L, D)
            x = self.norm3(x + self.dropout3(self.ff(x)))
        return x, self_w, cross_w  # (B, L, D), (B, H, L, L), (B, H, L, S)

    # --8<-- [end:decoder_layer]

    def _check_inputs(self, x, memory, memory_mask) -> None:
        check_vectors("x", x, self.d_model, legend="(B, L, D)")
        check_vectors("memory", memory, self.d_model, legend="(B, S, D)")
        if memory.size(0) != x.size(0):
            raise ValueError(
                "x and memory must have the same batch size B, got x "
                f"{shape_str(x.shape)} and memory {shape_str(memory.shape)}"
            )
        if memory_mask is not None:
            B, L, S = x.size(0), x.size(1), memory.size(1)
            scores = (B, self.cross_attn.num_heads, L, S)
            _check_named_mask("memory_mask", memory_mask, scores, "(B, H, L, S)")

    @classmethod
    def from_torch(cls, layer: nn.TransformerDecoderLayer) -> DecoderLayer:
        """A ``DecoderLayer`` with the same weights and settings as ``layer``
        (relu or gelu, post- or pre-norm, with or without bias)."""
        if not isinstance(layer, nn.TransformerDecoderLayer):
            raise TypeError(
                "layer must be an nn.TransformerDecoderLayer, got "
                f"{type(layer).__name__}"
            )
        activation = _activation_name(layer)
        ours = cls(
            layer.self_attn.embed_dim,
            layer.self_attn.num_heads,
            layer.linear1.out_features,
            dropout=layer.dropout.p,
            activation=activation,
            norm_first=layer.norm_first,
            layer_norm_eps=layer.norm1.eps,
            bias=layer.linear1.bias is not None,
        )
        ref = layer.linear1.weight
        # before loading: no float32 round trip
        ours.to(device=ref.device, dtype=ref.dtype)
        ours.self_attn = MultiHeadAttention.from_torch(layer.self_attn)
        ours.cross_attn = MultiHeadAttention.from_torch(layer.multihead_attn)
        ours.ff.linear1.load_state_dict(layer.linear1.state_dict())
        ours.ff.linear2.load_state_dict(layer.linear2.state_dict())
        for name in ("norm1", "norm2", "norm3"):
            getattr(ours, name).load_state_dict(getattr(layer, name).state_dict())
        return ours.train(layer.training)


# --8<-- [start:encoder_decoder]
class EncoderDecoder(nn.Module):
    """Source ids ``(B, S)`` and decoder input ids ``(B, L)`` in; logits
    ``(B, L, V)`` and one map of cross weights ``(B, H, L, S)`` per decoder
    layer out.

    The encoder is the encoder chapter's ``Encoder``. The decoder embeds its
    input (scaled by sqrt(D)) and adds sinusoidal positions, runs
    ``num_layers`` decoder layers with ``causal_mask(L)`` and the source's
    mask, and a linear output projection gives a score for every token.
    ``source_mask`` (``padding_mask(lengths)``, ``(B, 1, 1, S)``, True = a real
    token) hides the source's padding from the encoder and from every
    cross-attention.

    ``share_embeddings=True`` gives source and target one embedding table
    (they share a vocabulary here); ``False``, one each. Like the encoder
    chapter's classifier, the tables are drawn with standard deviation
    ``1 / sqrt(D)``, so that after the scaling by ``sqrt(D)`` they do not
    drown the positions.
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
        share_embeddings: bool = True,
    ):
        super().__init__()
        check_positive_int("max_len", max_len)
        self.vocab_size, self.d_model, self.max_len = vocab_size, d_model, max_len
        settings = dict(d_ff=d_ff, dropout=dropout, norm_first=norm_first)
        self.encoder = Encoder(
            vocab_size, d_model, num_heads, num_layers, max_len=max_len, **settings
        )
        if share_embeddings:
            self.target_embedding = self.encoder.embedding  # one table for both
        else:
            self.target_embedding = nn.Embedding(vocab_size, d_model)
        for table in (self.encoder.embedding, self.target_embedding):
            # small: after the sqrt(D) scaling, the size of the positions
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.positional = PositionalEncoding(d_model, max_len, dropout)
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, num_heads, **settings) for _ in range(num_layers)
        )
        self.final_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.out = nn.Linear(d_model, vocab_size)  # D -> V scores

    def encode(self, source, source_mask=None) -> torch.Tensor:
        """The memory: the encoder's output ``(B, S, D)``."""
        memory, _ = self.encoder(source, mask=source_mask)
        return memory

    def decode(self, decoder_input, memory, source_mask=None):
        """``(logits (B, L, V), [cross weights (B, H, L, S) per layer])``."""
        L = decoder_input.size(1)
        y = self.target_embedding(decoder_input) * math.sqrt(self.d_model)
        y = self.positional(y)  # (B, L, D)
        self_mask = causal_mask(L, device=y.device)  # (L, L): the past only
        cross_weights = []
        for layer in self.layers:
            y, _, cross_w = layer(y, memory, self_mask, source_mask)
            cross_weights.append(cross_w)  # (B, H, L, S)
        return self.out(self.final_norm(y)), cross_weights  # (B, L, V)

    def forward(self, source, decoder_input, source_mask=None):
        """Teacher forcing: the decoder reads the true previous tokens."""
        self._check_forward(source, decoder_input, source_mask)
        memory = self.encode(source, source_mask)  # (B, S, D)
        return self.decode(decoder_input, memory, source_mask)

    @torch.no_grad()
    def generate(self, source, length=None, source_mask=None):
        """Greedy decoding from ``BOS``; returns the tokens ``(B, length)``
        and one map of cross weights ``(B, H, length, S)`` per layer.
        ``length`` defaults to ``S``.

        The source is encoded once; each step runs the decoder on everything
        written so far (no cache: the whole prefix, and the memory's keys and
        values projected again) and appends its most likely next token. Row
        ``t`` of the weights is what step ``t`` attended to.
        """
        length = source.size(-1) if length is None else length
        check_positive_int("length", length)
        start = torch.full_like(source[:, :1], BOS)  # (B, 1)
        self._check_forward(source, start, source_mask, length)
        memory = self.encode(source, source_mask)  # once: (B, S, D)
        written = start
        for _ in range(length):
            logits, weights = self.decode(written, memory, source_mask)
            next_token = logits[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1)
            written = torch.cat([written, next_token], dim=1)
        return written[:, 1:], weights  # without BOS: (B, length)

    # --8<-- [end:encoder_decoder]

    def _check_forward(self, source, decoder_input, source_mask, length=None):
        check_token_ids("source", source, self.vocab_size, max_len=self.max_len)
        max_len = self.max_len
        if length is not None and length > max_len:
            raise ValueError(
                f"length {length} exceeds the position table: max_len={max_len}"
            )
        check_token_ids(
            "decoder_input", decoder_input, self.vocab_size, max_len=max_len
        )
        if decoder_input.size(0) != source.size(0):
            raise ValueError(
                f"source {shape_str(source.shape)} and decoder_input "
                f"{shape_str(decoder_input.shape)} must have the same batch size"
            )
        if source_mask is not None:
            shape = (source.size(0), 1, 1, source.size(1))
            _check_named_mask("source_mask", source_mask, shape, "(B, 1, 1, S)")


def _check_named_mask(name, mask, shape, legend) -> None:
    """``check_mask``, with the argument's name in front of its message."""
    try:
        check_mask(mask, shape, legend)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{name}: {error}") from None
