"""The one training loop (with a learning-rate warm-up and gradient clipping)
that every training in the package calls, and the order classifier's training.

Warm-up starts the learning rate small and raises it linearly over the first
steps: at initialisation the gradients can be large and Adam's running
estimates of their size are still noisy, so full-size steps then can throw the
weights somewhere they never recover from. Clipping caps the norm of the whole
gradient (keeping its direction), so one unlucky batch enters the optimiser's
running averages at most at the cap's size.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ..validate import check_positive_int
from .classifier import EncoderClassifier, order_task_batch

__all__ = [
    "warmup_factor",
    "OPTIMIZERS",
    "train",
    "classifier_loss",
    "train_loop",
    "accuracy",
    "train_order_classifier",
]

_DECAYS = ("constant", "inverse_sqrt")


# --8<-- [start:warmup]
def warmup_factor(step: int, warmup_steps: int, decay: str = "constant") -> float:
    """The multiplier of the peak learning rate for optimiser step ``step``
    (0, 1, ...).

    It rises linearly, ``(step + 1) / warmup_steps``, to 1 at the end of the
    warm-up; then stays at 1 (``decay="constant"``) or falls as
    ``sqrt(warmup_steps / (step + 1))`` (``"inverse_sqrt"``, the schedule of
    the 2017 Transformer paper). ``warmup_steps=0`` means no warm-up.
    """
    _check_schedule(step, warmup_steps, decay)
    n = step + 1  # steps taken so far, counting this one
    if n <= warmup_steps:
        return n / warmup_steps  # linear ramp: 1/w, 2/w, ..., 1
    if decay == "inverse_sqrt":
        return math.sqrt(warmup_steps / n) if warmup_steps else 1 / math.sqrt(n)
    return 1.0


# --8<-- [end:warmup]


def _check_schedule(step, warmup_steps, decay) -> None:
    for name, value in (("step", step), ("warmup_steps", warmup_steps)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                f"{name} must be an int, got {type(value).__name__} {value!r}"
            )
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    if decay not in _DECAYS:
        raise ValueError(f"decay must be one of {list(_DECAYS)}, got {decay!r}")


OPTIMIZERS = ("adamw", "sgd")


# --8<-- [start:train]
def train(
    model: nn.Module,
    next_batch: Callable[[], object],
    loss_fn: Callable[[nn.Module, object], torch.Tensor],
    *,
    steps: int,
    lr: float,
    optimizer: str = "adamw",
    weight_decay: float = 0.0,
    warmup_steps: int = 0,
    decay: str = "constant",
    max_grad_norm: float | None = None,
) -> dict[str, list[float]]:
    """The one training loop: every training in the package and on the pages
    calls it.

    Each of the ``steps`` steps draws a batch with ``next_batch()``, computes
    ``loss_fn(model, batch)`` (a scalar tensor), and takes one optimiser step.
    ``optimizer="adamw"`` is AdamW (with ``weight_decay=0``, the default, it is
    exactly Adam); ``"sgd"`` is plain gradient descent. The learning rate is
    ``lr * warmup_factor(step, warmup_steps, decay)``. ``max_grad_norm`` clips
    the norm of all gradients together; ``None`` leaves them untouched.

    Leaves ``model`` in training mode and returns the history, one entry per
    step: ``loss``, ``grad_norm`` (the norm of all gradients together,
    measured before clipping) and ``lr``.
    """
    _check_training(
        model,
        next_batch,
        loss_fn,
        steps,
        lr,
        optimizer,
        weight_decay,
        max_grad_norm,
    )
    _check_schedule(0, warmup_steps, decay)
    make = torch.optim.AdamW if optimizer == "adamw" else torch.optim.SGD
    opt = make(model.parameters(), lr=lr, weight_decay=weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: warmup_factor(step, warmup_steps, decay)
    )
    # inf: measure, never clip
    cap = math.inf if max_grad_norm is None else max_grad_norm
    history = {"loss": [], "grad_norm": [], "lr": []}
    model.train()
    for _ in range(steps):
        loss = loss_fn(model, next_batch())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        # one norm over every gradient; if it exceeds cap, all are scaled by
        # cap / norm
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), cap)
        history["lr"].append(schedule.get_last_lr()[0])
        opt.step()
        schedule.step()  # the next step's learning rate
        history["loss"].append(loss.item())
        history["grad_norm"].append(grad_norm.item())
    return history


# --8<-- [end:train]


def _check_training(
    model, next_batch, loss_fn, steps, lr, optimizer, weight_decay, max_grad_norm
) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"model must be a torch.nn.Module, got {type(model).__name__}"
        )
    for name, value in (("next_batch", next_batch), ("loss_fn", loss_fn)):
        if not callable(value):
            raise TypeError(
                f"{name} must be callable, got {type(value).__name__} {value!r}"
            )
    check_positive_int("steps", steps)
    _check_number("lr", lr)
    if not lr > 0:
        raise ValueError(f"lr must be a positive number, got {lr!r}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(
            f"optimizer must be one of {list(OPTIMIZERS)}, got {optimizer!r}"
        )
    _check_number("weight_decay", weight_decay)
    if not weight_decay >= 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay!r}")
    if max_grad_norm is not None:
        _check_number("max_grad_norm", max_grad_norm, " or None")
        if not max_grad_norm > 0:
            raise ValueError(
                "max_grad_norm must be a positive number or None, got "
                f"{max_grad_norm!r}"
            )


def _check_number(name: str, value, alternative: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"{name} must be a number{alternative}, got "
            f"{type(value).__name__} {value!r}"
        )


# tokens (B, L), lengths (B,), labels (B,)
Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


# --8<-- [start:train_loop]
def classifier_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    """Cross-entropy of a classifier's logits ``(B, C)`` for a batch
    ``(tokens (B, L), lengths (B,), labels (B,))``."""
    tokens, lengths, labels = batch  # (B, L), (B,), (B,)
    logits, _ = model(tokens, lengths)  # (B, C)
    return F.cross_entropy(logits, labels)


def train_loop(
    model: nn.Module,
    next_batch: Callable[[], Batch],
    *,
    steps: int,
    lr: float,
    warmup_steps: int = 0,
    max_grad_norm: float | None = 1.0,
) -> dict[str, list[float]]:
    """Train a classifier with ``train`` (AdamW) and ``classifier_loss`` on
    batches from ``next_batch()``; clips at ``max_grad_norm=1.0`` by default.

    Returns the history, one entry per step: ``loss``, ``grad_norm`` (the norm
    of all gradients together, measured before clipping) and ``lr``.
    """
    return train(
        model,
        next_batch,
        classifier_loss,
        steps=steps,
        lr=lr,
        warmup_steps=warmup_steps,
        max_grad_norm=max_grad_norm,
    )


# --8<-- [end:train_loop]


@torch.no_grad()
def accuracy(model: nn.Module, tokens, lengths, labels) -> float:
    """The fraction of sequences whose largest logit is the label
    (model in eval mode)."""
    was_training = model.training
    model.eval()
    logits, _ = model(tokens, lengths)  # (B, C)
    model.train(was_training)
    return (logits.argmax(dim=-1) == labels).float().mean().item()


# --8<-- [start:train_order_classifier]
def train_order_classifier(
    *,
    vocab_size: int = 12,
    min_len: int = 6,
    max_len: int = 12,
    d_model: int = 32,
    num_heads: int = 4,
    num_layers: int = 2,
    d_ff: int = 64,
    norm_first: bool = False,
    dropout: float = 0.0,
    small_embedding_init: bool = True,
    steps: int = 300,
    batch_size: int = 64,
    lr: float = 1e-3,
    warmup_steps: int = 0,
    max_grad_norm: float | None = 1.0,
    eval_size: int = 1000,
    seed: int = 0,
    device: str | None = None,
) -> dict:
    """Train an ``EncoderClassifier`` on "does A come before B?".

    Seeded: the same arguments give the same result. Returns plain data that
    ``attention_src.machinery.cached`` can store: ``state_dict``, ``model_kwargs``,
    ``history`` (from ``train_loop``) and ``accuracy`` on ``eval_size``
    fresh sequences drawn with a different seed than the training batches.
    """
    torch.manual_seed(seed)  # the initial weights
    # the data comes from CPU generators, so every device trains on the same
    # sequences
    data = torch.Generator().manual_seed(seed)  # the training batches
    held_out = torch.Generator().manual_seed(seed + 1_000_003)  # a different stream
    model_kwargs = dict(
        vocab_size=vocab_size,
        d_model=d_model,
        num_heads=num_heads,
        num_layers=num_layers,
        d_ff=d_ff,
        num_classes=2,
        dropout=dropout,
        max_len=max_len,
        norm_first=norm_first,
        small_embedding_init=small_embedding_init,
    )
    model = EncoderClassifier(**model_kwargs).to(device)

    def batch(size, generator):
        tokens, lengths, labels = order_task_batch(
            size, vocab_size, min_len, max_len, generator=generator
        )
        return tokens.to(device), lengths.to(device), labels.to(device)

    history = train_loop(
        model,
        lambda: batch(batch_size, data),
        steps=steps,
        lr=lr,
        warmup_steps=warmup_steps,
        max_grad_norm=max_grad_norm,
    )
    test = batch(eval_size, held_out)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return {
        "state_dict": state,
        "model_kwargs": model_kwargs,
        "history": history,
        "accuracy": accuracy(model, *test),
    }


# --8<-- [end:train_order_classifier]
