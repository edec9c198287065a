"""A sequence classifier built on the encoder, and the synthetic task it learns.

The task, "which comes first?": every sequence holds one token ``A`` and one
token ``B`` at random positions among filler tokens, padded to a common length.
The label says whether ``A`` comes before ``B``. Both classes draw their
tokens the same way and differ only in order, so a model that ignores order is
stuck at chance: the answer depends on where the two tokens sit.
"""

from __future__ import annotations

import torch
from torch import nn

from ..encoder import Encoder
from ..masks import padding_mask
from ..validate import check_ndim, check_positive_int, check_tensor, shape_str

__all__ = ["PAD", "TOKEN_A", "TOKEN_B", "order_task_batch", "EncoderClassifier"]

PAD = 0
TOKEN_A = 1
TOKEN_B = 2  # ids 3 .. vocab_size - 1 are filler tokens


# --8<-- [start:order_task]
def order_task_batch(
    batch_size: int,
    vocab_size: int,
    min_len: int,
    max_len: int,
    *,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(tokens (B, max_len), lengths (B,), labels (B,))`` for "does A come before
    B?".

    Sequence ``b`` has ``lengths[b]`` real tokens (between ``min_len`` and
    ``max_len``), then ``PAD``. Among the real tokens, one is ``TOKEN_A``, one
    is ``TOKEN_B`` (at two different random positions) and the rest are
    fillers. ``labels[b]`` is 1 if ``A`` comes first, else 0 (each with
    probability 1/2).
    """
    _check_task(batch_size, vocab_size, min_len, max_len)
    lengths = torch.randint(
        min_len, max_len + 1, (batch_size,), generator=generator, device=device
    )  # (B,)
    tokens = torch.randint(
        TOKEN_B + 1,
        vocab_size,
        (batch_size, max_len),
        generator=generator,
        device=device,
    )  # (B, L): fillers everywhere
    u = torch.rand(batch_size, 2, generator=generator, device=device)  # (B, 2)
    pos_a = (u[:, 0] * lengths).long()  # (B,) uniform in 0 .. n-1
    pos_b = (u[:, 1] * (lengths - 1)).long()  # (B,) uniform in 0 .. n-2 ...
    # ... then skip pos_a: uniform over the rest
    pos_b = pos_b + (pos_b >= pos_a).long()
    rows = torch.arange(batch_size, device=device)
    tokens[rows, pos_a] = TOKEN_A
    tokens[rows, pos_b] = TOKEN_B
    positions = torch.arange(max_len, device=device)  # (L,)
    tokens[positions[None, :] >= lengths[:, None]] = PAD  # (B, L)
    labels = (pos_a < pos_b).long()  # (B,)
    return tokens, lengths, labels


# --8<-- [end:order_task]


def _check_task(batch_size, vocab_size, min_len, max_len) -> None:
    for name, value in (
        ("batch_size", batch_size),
        ("vocab_size", vocab_size),
        ("min_len", min_len),
        ("max_len", max_len),
    ):
        check_positive_int(name, value)
    if vocab_size < TOKEN_B + 2:
        raise ValueError(
            f"vocab_size must be at least {TOKEN_B + 2} (PAD, A, B and one "
            f"filler), got {vocab_size}"
        )
    if min_len < 2:
        raise ValueError(
            f"min_len must be at least 2 (room for A and B), got {min_len}"
        )
    if max_len < min_len:
        raise ValueError(f"max_len ({max_len}) must be >= min_len ({min_len})")


# --8<-- [start:classifier]
class EncoderClassifier(nn.Module):
    """Token ids ``(B, L)`` ->
    ``(logits (B, C), [weights (B, H, L, L) per layer])``.

    An ``Encoder``, the mean of its outputs over the real positions of
    each sequence, and a linear layer to ``num_classes`` logits. ``lengths``
    ``(B,)`` gives the real length of each sequence; the positions after it
    are padding, hidden from attention and left out of the mean.

    ``small_embedding_init=True`` draws the token embeddings with standard
    deviation ``1 / sqrt(D)`` instead of ``nn.Embedding``'s 1, so that after
    the encoder multiplies them by ``sqrt(D)`` they have the same size as the
    positional encoding instead of drowning it.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        num_heads: int,
        num_layers: int,
        d_ff: int,
        num_classes: int,
        *,
        dropout: float = 0.0,
        max_len: int = 512,
        norm_first: bool = False,
        activation: str = "relu",
        small_embedding_init: bool = True,
    ):
        super().__init__()
        check_positive_int("num_classes", num_classes)
        self.encoder = Encoder(
            vocab_size,
            d_model,
            num_heads,
            num_layers,
            d_ff,
            dropout=dropout,
            max_len=max_len,
            norm_first=norm_first,
            activation=activation,
        )
        if small_embedding_init:
            nn.init.normal_(self.encoder.embedding.weight, std=d_model**-0.5)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor | None = None):
        if lengths is None:  # no padding: every position is real
            x, weights = self.encoder(tokens)  # (B, L, D)
            return self.head(x.mean(dim=1)), weights  # (B, C)
        self._check_lengths(tokens, lengths)
        # (B, 1, 1, L), True = real token
        mask = padding_mask(lengths, tokens.size(1))
        x, weights = self.encoder(tokens, mask=mask)  # (B, L, D)
        real = mask[:, 0, 0, :, None].to(x.dtype)  # (B, L, 1)
        # (B, D): mean over real tokens
        pooled = (x * real).sum(dim=1) / real.sum(dim=1)
        return self.head(pooled), weights  # (B, C)

    # --8<-- [end:classifier]

    def _check_lengths(self, tokens, lengths) -> None:
        self.encoder._check_tokens(tokens)  # tokens first: (B, L) integer ids
        check_tensor("lengths", lengths)
        if lengths.is_floating_point() or lengths.dtype == torch.bool:
            raise TypeError(
                f"lengths must be integer lengths, got dtype {lengths.dtype}"
            )
        check_ndim("lengths", lengths, 1, "(B,)")
        if lengths.device != tokens.device:
            raise ValueError(
                "lengths must be on the same device as tokens, got "
                f"{lengths.device} and {tokens.device}"
            )
        B, L = tokens.shape
        if lengths.size(0) != B:
            raise ValueError(
                "lengths must hold one length per sequence: tokens shape "
                f"{shape_str(tokens.shape)} has B={B}, lengths shape "
                f"{shape_str(lengths.shape)}"
            )
        if lengths.numel() and (lengths.min() < 1 or lengths.max() > L):
            raise ValueError(
                f"lengths must be in [1, {L}] for tokens of length L={L}, got "
                f"values from {int(lengths.min())} to {int(lengths.max())}"
            )
