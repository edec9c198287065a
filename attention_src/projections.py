"""What the query and key projections buy: a task attention cannot learn without
them.

Without projections the queries and keys are the tokens themselves, ``Q = K = X``,
and the score of token ``i`` for token ``j`` is the dot product ``x_i · x_j``. That
table is symmetric, and by the Cauchy–Schwarz inequality
``x_i · x_j <= |x_i| |x_j|``, which rules out some attention patterns whatever
the embeddings are. The *partner task* needs one of them: every token of a
sequence must attend to its partner (``a <-> b``, ``c <-> d``, ...), never to
itself. For a pair ``(a, b)`` that means ``x_a · x_b > |x_a|²`` and
``x_a · x_b > |x_b|²`` at once, but
``x_a · x_b <= |x_a| |x_b| <= max(|x_a|², |x_b|²)``,
so at most one of the two can be right. With ``Q = X W_Q`` and ``K = X W_K``
the score ``x_iᵀ W_Q W_Kᵀ x_j`` need not be symmetric, and the task is learnable.

``PartnerAttention`` is the tiny model (an embedding and one attention score
table). The task's data and the training are an experiment:
``attention_src.experiments.partner``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .validate import check_ndim, check_positive_int, check_tensor

__all__ = ["PROJECTIONS", "PartnerAttention"]

PROJECTIONS = ("none", "shared", "separate")


def _check_projections(projections) -> None:
    """``projections`` is one of ``PROJECTIONS``."""
    if projections not in PROJECTIONS:
        raise ValueError(
            f"projections must be one of {PROJECTIONS}, got {projections!r}",
        )


# --8<-- [start:partner_attention]
class PartnerAttention(nn.Module):
    """Token embeddings and one table of attention scores, projected or not.

    Args:
        vocab_size: how many different tokens there are.
        d_model: D, the width of an embedding.
        d_k: the width of queries and keys when there are projections
            (defaults to ``d_model``).
        projections: ``"none"``: ``Q = K = X``; ``"shared"``: ``Q = K = X W``;
            ``"separate"``: ``Q = X W_Q``, ``K = X W_K``.

    ``forward(tokens (B, L))`` returns the scores ``(B, L, L)``; the attention
    weights are their softmax along the last dimension.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        d_k: int | None = None,
        projections: str = "separate",
    ):
        super().__init__()
        _check_projections(projections)
        d_k = d_model if d_k is None else d_k
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("d_model", d_model)
        check_positive_int("d_k", d_k)
        self.projections = projections
        self.embed = nn.Embedding(vocab_size, d_model)
        self.q_proj = self.k_proj = None
        if projections != "none":
            self.q_proj = nn.Linear(d_model, d_k, bias=False)  # W_Q, or shared W
            self.k_proj = self.q_proj
            if projections == "separate":
                self.k_proj = nn.Linear(d_model, d_k, bias=False)  # W_K

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        check_tensor("tokens", tokens)
        check_ndim("tokens", tokens, 2, "(B, L)")
        x = self.embed(tokens)  # (B, L, D)
        if self.q_proj is None:
            q = k = x  # (B, L, D): the tokens themselves
        else:
            q, k = self.q_proj(x), self.k_proj(x)  # (B, L, d_k)
        return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, L, L)


# --8<-- [end:partner_attention]
