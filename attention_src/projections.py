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
table); ``partner_batch`` makes the data; ``train_partner_attention`` trains it.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .checks import check_ndim, check_positive_int, check_tensor, shape_str

__all__ = [
    "PROJECTIONS",
    "partner_of",
    "partner_batch",
    "PartnerAttention",
    "partner_accuracy",
    "train_partner_attention",
]

PROJECTIONS = ("none", "shared", "separate")


# --8<-- [start:partner_batch]
def partner_of(tokens: torch.Tensor) -> torch.Tensor:
    """The fixed pairing 0 <-> 1, 2 <-> 3, ...: flip the lowest bit."""
    return tokens ^ 1


def partner_batch(
    batch_size: int,
    num_pairs: int,
    vocab_size: int = 16,
    *,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Shuffled sequences of ``num_pairs`` distinct pairs; where each partner is.

    Returns:
        tokens ``(B, L)`` with ``L = 2 * num_pairs``: every token's partner is
        somewhere else in the same sequence; and target ``(B, L)``: the
        position of the partner of the token at each position.
    """
    check_positive_int("batch_size", batch_size)
    check_positive_int("num_pairs", num_pairs)
    check_positive_int("vocab_size", vocab_size)
    if vocab_size % 2 or num_pairs > vocab_size // 2:
        raise ValueError(
            f"vocab_size ({vocab_size}) must be even and hold num_pairs "
            f"({num_pairs}) distinct pairs (at most vocab_size // 2 = "
            f"{vocab_size // 2})"
        )
    if generator is not None:
        device = generator.device
    B, L = batch_size, 2 * num_pairs
    # 1) num_pairs distinct pairs per sequence, both members of each
    pair_ids = torch.rand(B, vocab_size // 2, generator=generator, device=device)
    pair_ids = pair_ids.argsort(dim=-1)[:, :num_pairs]  # (B, P)
    tokens = torch.cat([2 * pair_ids, 2 * pair_ids + 1], dim=1)  # (B, L)
    # 2) shuffle the positions
    order = torch.rand(B, L, generator=generator, device=device).argsort(dim=-1)
    tokens = tokens.gather(1, order)  # (B, L)
    # 3) target[b, i] = the position j of the partner of tokens[b, i]
    is_partner = tokens.unsqueeze(1) == partner_of(tokens).unsqueeze(2)  # (B, L, L)
    target = is_partner.int().argmax(dim=-1)  # (B, L)
    return tokens, target


# --8<-- [end:partner_batch]


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
        if projections not in PROJECTIONS:
            raise ValueError(
                f"projections must be one of {PROJECTIONS}, got {projections!r}",
            )
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


def partner_accuracy(scores: torch.Tensor, target: torch.Tensor) -> float:
    """The fraction of tokens whose largest attention weight is on their partner."""
    if scores.shape[:-1] != target.shape:
        raise ValueError(
            f"scores {shape_str(scores.shape)} and target "
            f"{shape_str(target.shape)} must agree on (B, L)"
        )
    return (scores.argmax(dim=-1) == target).float().mean().item()


# --8<-- [start:train]
def train_partner_attention(
    projections: str,
    *,
    vocab_size: int = 16,
    num_pairs: int = 4,
    d_model: int = 16,
    d_k: int | None = None,
    steps: int = 120,
    batch_size: int = 128,
    lr: float = 0.05,
    seed: int = 0,
    device: str = "cpu",
) -> dict:
    """Train a ``PartnerAttention`` to put each token's attention on its partner.

    The loss is the cross-entropy between each row of scores and the
    partner's position: the attention weights themselves are trained.

    Returns:
        a dict with the loss every 10 steps (``"losses"``, at the steps
        ``"loss_steps"``), the accuracy on
        2 000 fresh sequences (``"accuracy"``), the model's ``"state"`` and
        ``"num_parameters"``.
    """
    torch.manual_seed(seed)  # the model's initial weights
    train_gen = torch.Generator(device=device).manual_seed(seed)
    test_gen = torch.Generator(device=device).manual_seed(10_000 + seed)
    model = PartnerAttention(vocab_size, d_model, d_k, projections).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses, loss_steps = [], []
    for step in range(steps):
        tokens, target = partner_batch(
            batch_size,
            num_pairs,
            vocab_size,
            generator=train_gen,
        )
        scores = model(tokens)  # (B, L, L)
        loss = nn.functional.cross_entropy(scores.flatten(0, 1), target.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0 or step == steps - 1:
            losses.append(loss.item())
            loss_steps.append(step)
    model.eval()
    with torch.no_grad():
        tokens, target = partner_batch(
            2000,
            num_pairs,
            vocab_size,
            generator=test_gen,
        )
        accuracy = partner_accuracy(model(tokens), target)
    return {
        "losses": losses,
        "loss_steps": loss_steps,
        "accuracy": accuracy,
        "state": {name: t.detach().cpu() for name, t in model.state_dict().items()},
        "num_parameters": sum(p.numel() for p in model.parameters()),
    }


# --8<-- [end:train]
