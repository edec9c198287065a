"""The previous-token task and the one-layer tagger that the positional-encoding
chapter trains on it, to show what happens at lengths never seen in training.

``previous_token_batch`` makes the data (the target at position ``t`` is the token
at ``t - 1``); ``OneLayerTagger`` is the model (embedding, positions, one
multi-head self-attention layer with a residual connection, a linear read-out);
``train_tagger`` trains it with ``experiments.training.train``;
``previous_token_accuracy`` scores it at any length.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..multi_head import MultiHeadAttention
from ..positional import LearnedPositionalEmbedding, PositionalEncoding
from ..validate import check_positive_int, check_token_ids
from .training import train

__all__ = [
    "IGNORE_INDEX",
    "previous_token_batch",
    "OneLayerTagger",
    "train_tagger",
    "tagging_loss",
    "previous_token_accuracy",
    "run_tagger_experiment",
]

# the target of a position that has no answer (F.cross_entropy skips it)
IGNORE_INDEX = -100


# --8<-- [start:previous_token]
def previous_token_batch(
    batch_size: int,
    length: int,
    vocab_size: int,
    *,
    generator: torch.Generator | None = None,
    device=None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random ids ``(B, L)`` and targets ``(B, L)``: the target at position ``t``
    is the token at ``t - 1``. Position 0 has no previous token; its target is
    ``IGNORE_INDEX``.
    """
    for name, value in (("batch_size", batch_size), ("length", length)):
        check_positive_int(name, value)
    check_positive_int("vocab_size", vocab_size)
    tokens = torch.randint(
        vocab_size, (batch_size, length), generator=generator, device=device
    )  # (B, L)
    targets = torch.full_like(tokens, IGNORE_INDEX)  # (B, L)
    targets[:, 1:] = tokens[:, :-1]  # shifted right by one position
    return tokens, targets


# --8<-- [end:previous_token]


def _check_positions(positions) -> None:
    """``positions`` names one of the tagger's three kinds of positions."""
    if positions not in ("sinusoidal", "learned", "none"):
        raise ValueError(
            'positions must be "sinusoidal", "learned" or "none", got '
            f"{positions!r}"
        )


# --8<-- [start:tagger]
class OneLayerTagger(nn.Module):
    """Ids ``(B, L)`` -> logits ``(B, L, V)``: one prediction per token.

    Token embedding, plus positions, one multi-head self-attention layer with
    a residual connection, and a linear read-out.

    Args:
        vocab_size: V, the number of token ids (inputs and outputs).
        d_model: D.
        num_heads: H; must divide ``d_model``.
        max_len: the longest sequence the position table covers.
        positions: ``"sinusoidal"`` (``PositionalEncoding``), ``"learned"``
            (``LearnedPositionalEmbedding``) or ``"none"``.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        num_heads: int,
        max_len: int,
        positions: str = "sinusoidal",
    ):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("max_len", max_len)
        self.vocab_size, self.kind = vocab_size, positions
        self.embedding = nn.Embedding(vocab_size, d_model)
        _check_positions(positions)
        if positions == "sinusoidal":
            self.positions = PositionalEncoding(d_model, max_len=max_len)
        elif positions == "learned":
            self.positions = LearnedPositionalEmbedding(d_model, max_len)
        elif positions == "none":
            self.positions = nn.Identity()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        check_token_ids("tokens", tokens, self.vocab_size)
        x = self.positions(self.embedding(tokens))  # (B, L, D)
        x = x + self.attn(x)[0]  # (B, L, D): each token reads the others
        return self.head(x)  # (B, L, V)


# --8<-- [end:tagger]


# --8<-- [start:train_tagger]
def train_tagger(
    *,
    positions: str,
    vocab_size: int,
    d_model: int,
    num_heads: int,
    max_len: int,
    max_train_len: int,
    steps: int,
    batch_size: int,
    lr: float,
    seed: int,
    device=None,
) -> dict:
    """Train a ``OneLayerTagger`` on the previous-token task, each step on a
    fresh batch of one length drawn from ``2 .. max_train_len``.

    Returns ``{"state_dict": ..., "losses": [...], "model_kwargs": ...}``,
    plain data that ``attention_src.machinery.cached`` can store.
    """
    check_positive_int("steps", steps)
    if not 2 <= max_train_len <= max_len:
        raise ValueError(
            f"max_train_len must be in [2, max_len={max_len}], got {max_train_len}"
        )
    torch.manual_seed(seed)  # the model's initial weights
    generator = torch.Generator(device=device).manual_seed(seed)  # the data
    model_kwargs = dict(
        vocab_size=vocab_size,
        d_model=d_model,
        num_heads=num_heads,
        max_len=max_len,
        positions=positions,
    )
    model = OneLayerTagger(**model_kwargs).to(device)

    def next_batch():
        length = int(
            torch.randint(
                2, max_train_len + 1, (1,), generator=generator, device=device
            )
        )
        return previous_token_batch(
            batch_size, length, vocab_size, generator=generator, device=device
        )  # (B, L) each

    losses = train(model, next_batch, tagging_loss, steps=steps, lr=lr)["loss"]
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return {"state_dict": state, "losses": losses, "model_kwargs": model_kwargs}


# --8<-- [end:train_tagger]


def tagging_loss(model: nn.Module, batch) -> torch.Tensor:
    """Cross-entropy of a tagger's logits ``(B, L, V)`` (or ``(B, L, R, V)``) for
    ``batch = (tokens, targets)``, skipping targets equal to ``IGNORE_INDEX``."""
    tokens, targets = batch  # (B, L), (B, L) or (B, L, R)
    logits = model(tokens)  # (B, L, V) or (B, L, R, V)
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)),
        targets.reshape(-1),
        ignore_index=IGNORE_INDEX,
    )


@torch.no_grad()
def previous_token_accuracy(
    model: OneLayerTagger,
    lengths,
    *,
    num_sequences: int = 256,
    seed: int = 0,
    device=None,
) -> list[float]:
    """For each length, the fraction of positions ``1 .. L-1`` of ``num_sequences``
    fresh sequences whose previous token the model predicts (argmax)."""
    check_positive_int("num_sequences", num_sequences)
    generator = torch.Generator(device=device).manual_seed(seed)
    accuracies = []
    for length in lengths:
        if isinstance(length, bool) or not isinstance(length, int):
            raise TypeError(f"every length must be an int, got {length!r}")
        if length < 2:
            raise ValueError(
                "every length must be an int >= 2 (position 0 has no target), got "
                f"{length!r}"
            )
        tokens, targets = previous_token_batch(
            num_sequences,
            length,
            model.vocab_size,
            generator=generator,
            device=device,
        )
        predicted = model(tokens).argmax(dim=-1)  # (B, L)
        scored = targets != IGNORE_INDEX
        accuracies.append((predicted == targets)[scored].float().mean().item())
    return accuracies


def run_tagger_experiment(
    *,
    eval_lengths,
    num_sequences: int = 256,
    eval_seed: int = 1234,
    **train_settings,
) -> dict:
    """``train_tagger(**train_settings)``, then ``previous_token_accuracy`` at
    ``eval_lengths``: the result of ``train_tagger`` plus ``"accuracy"`` (one
    float per length) and ``"eval_lengths"``. Plain data, for
    ``attention_src.machinery.cached``.
    """
    device = train_settings.get("device")
    run = train_tagger(**train_settings)
    model = OneLayerTagger(**run["model_kwargs"]).to(device)
    model.load_state_dict(run["state_dict"])
    run["eval_lengths"] = list(eval_lengths)
    run["accuracy"] = previous_token_accuracy(
        model,
        run["eval_lengths"],
        num_sequences=num_sequences,
        seed=eval_seed,
        device=device,
    )
    return run
