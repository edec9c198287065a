"""The queries-keys-values chapter's experiment: the *partner task* (every token
must attend to its partner, never to itself) and the training of
``PartnerAttention`` on it.

The model and why a symmetric score cannot solve the task are the lesson:
``attention_src.projections``.
"""

from __future__ import annotations

import torch
from torch import nn

from ..projections import PartnerAttention
from ..validate import check_positive_int, shape_str
from .training import train

__all__ = [
    "partner_of",
    "partner_batch",
    "partner_accuracy",
    "train_partner_attention",
]


def _check_partner_batch(batch_size, num_pairs, vocab_size) -> None:
    """``partner_batch``'s sizes: positive ints, and a vocabulary of whole pairs
    with at least ``num_pairs`` of them."""
    check_positive_int("batch_size", batch_size)
    check_positive_int("num_pairs", num_pairs)
    check_positive_int("vocab_size", vocab_size)
    if vocab_size % 2 or num_pairs > vocab_size // 2:
        raise ValueError(
            f"vocab_size ({vocab_size}) must be even and hold num_pairs "
            f"({num_pairs}) distinct pairs (at most vocab_size // 2 = "
            f"{vocab_size // 2})"
        )


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
    _check_partner_batch(batch_size, num_pairs, vocab_size)
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
    partner's position: the attention weights themselves are trained (with
    Adam, by ``train``).

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

    def next_batch():
        return partner_batch(batch_size, num_pairs, vocab_size, generator=train_gen)

    def partner_loss(model, batch):
        tokens, target = batch  # (B, L), (B, L)
        scores = model(tokens)  # (B, L, L)
        return nn.functional.cross_entropy(scores.flatten(0, 1), target.flatten())

    every_loss = train(model, next_batch, partner_loss, steps=steps, lr=lr)["loss"]
    loss_steps = [s for s in range(steps) if s % 10 == 0 or s == steps - 1]
    losses = [every_loss[s] for s in loss_steps]
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
