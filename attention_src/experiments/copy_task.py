"""The copy task the causal-attention chapter trains a ``CausalLM`` on: a
random first half followed by a copy of it, so every token of the second half is
determined by an earlier one; and the training.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..decoder import CausalLM
from ..validate import check_positive_int
from .training import train

__all__ = ["copy_task_batch", "train_copy_model", "next_token_loss"]


# --8<-- [start:copy_task]
def copy_task_batch(
    batch_size: int,
    half_len: int,
    vocab_size: int,
    *,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """``(B, 2 * half_len)`` ids: ``half_len`` random tokens, then the same again.

    Tokens ``0 .. half_len - 1`` are unpredictable; every later token equals the
    token ``half_len`` positions before it.
    """
    for name, value in (
        ("batch_size", batch_size),
        ("half_len", half_len),
        ("vocab_size", vocab_size),
    ):
        check_positive_int(name, value)
    first = torch.randint(
        vocab_size, (batch_size, half_len), generator=generator, device=device
    )  # (B, half_len)
    return torch.cat([first, first], dim=1)  # (B, 2 * half_len)


# --8<-- [end:copy_task]


# --8<-- [start:train]
def train_copy_model(
    *,
    vocab_size: int,
    half_len: int,
    d_model: int,
    num_heads: int,
    num_layers: int,
    d_ff: int,
    steps: int,
    batch_size: int,
    lr: float,
    seed: int,
    causal: bool = True,
    device: str | None = None,
) -> dict:
    """Train a ``CausalLM`` on the copy task with next-token cross-entropy.

    Returns ``{"state_dict": ..., "losses": [loss per step], "model_kwargs": ...}``,
    plain data that ``attention_src.machinery.cached`` can store.
    """
    check_positive_int("steps", steps)
    torch.manual_seed(seed)  # the model's initial weights
    generator = torch.Generator(device=device).manual_seed(seed)  # the data
    model_kwargs = dict(
        vocab_size=vocab_size,
        d_model=d_model,
        num_heads=num_heads,
        num_layers=num_layers,
        d_ff=d_ff,
        max_len=2 * half_len,
        causal=causal,
    )
    model = CausalLM(**model_kwargs).to(device)

    def next_batch():
        return copy_task_batch(
            batch_size, half_len, vocab_size, generator=generator, device=device
        )  # (B, 2 * half_len)

    losses = train(model, next_batch, next_token_loss, steps=steps, lr=lr)["loss"]
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return {"state_dict": state, "losses": losses, "model_kwargs": model_kwargs}


def next_token_loss(model: CausalLM, seq: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of predicting token ``t + 1`` from tokens ``0 .. t``, at
    every position of ``seq`` ``(B, L + 1)``."""
    inputs, targets = seq[:, :-1], seq[:, 1:]  # (B, L) each
    logits, _ = model(inputs)  # (B, L, V): L predictions per sequence
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


# --8<-- [end:train]
