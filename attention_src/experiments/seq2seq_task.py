"""The Seq2Seq chapter's experiment: the copy (or reverse) task, the training of
``Seq2SeqGRU`` and ``Seq2SeqAttentionGRU`` on it, their evaluation by greedy
decoding, and a linear probe of the plain model's final state.

The models and ``shift_right`` are the lesson: ``attention_src.seq2seq``.

Shapes: B batch, S input (source) length, L output length, H hidden size,
V vocabulary size.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..seq2seq import (
    Seq2SeqAttentionGRU,
    Seq2SeqGRU,
    _check_vocab_size,
    shift_right,
)
from ..validate import check_positive_int
from .training import train

__all__ = [
    "TASKS",
    "make_seq2seq_batch",
    "train_seq2seq",
    "teacher_forcing_loss",
    "accuracy_by_length",
    "accuracy_by_position",
    "run_seq2seq_experiment",
    "probe_final_state",
]

TASKS = ("copy", "reverse")


def _check_task(task) -> None:
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")


# --8<-- [start:data]
def make_seq2seq_batch(
    batch_size: int,
    length: int,
    vocab_size: int,
    *,
    task: str = "copy",
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random symbol sequences and what the model must output for them.

    Returns ``(source, target)``, both ``(B, length)`` token ids in
    ``1 .. vocab_size - 1``: ``target`` is ``source`` itself (``task="copy"``)
    or ``source`` back to front (``task="reverse"``). The tokens are drawn
    with ``generator`` (on its device) and then moved to ``device``.
    """
    check_positive_int("batch_size", batch_size)
    check_positive_int("length", length)
    _check_vocab_size(vocab_size)
    _check_task(task)
    where = generator.device if generator is not None else device
    source = torch.randint(
        1, vocab_size, (batch_size, length), generator=generator, device=where
    )  # (B, S)
    source = source.to(device) if device is not None else source
    target = source.flip(1) if task == "reverse" else source.clone()  # (B, L = S)
    return source, target


# --8<-- [end:data]


# --8<-- [start:train]
def train_seq2seq(
    model: Seq2SeqGRU,
    *,
    steps: int,
    batch_size: int = 64,
    min_len: int = 4,
    max_len: int = 16,
    task: str = "copy",
    lr: float = 1e-2,
    seed: int = 0,
) -> list[float]:
    """Train ``model`` in place with teacher forcing (Adam, gradients clipped at
    norm 1); return every step's loss.

    Each step draws one length in ``[min_len, max_len]`` and a batch of that
    length (so no padding is needed), on the model's device.
    """
    check_positive_int("steps", steps)
    check_positive_int("min_len", min_len)
    check_positive_int("max_len", max_len)
    if min_len > max_len:
        raise ValueError(
            f"min_len ({min_len}) must not exceed max_len ({max_len})",
        )
    _check_task(task)
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)  # same data on any device

    def next_batch():
        length = int(torch.randint(min_len, max_len + 1, (1,), generator=generator))
        return make_seq2seq_batch(
            batch_size,
            length,
            model.vocab_size,
            task=task,
            generator=generator,
            device=device,
        )  # (B, S), (B, L)

    history = train(
        model,
        next_batch,
        teacher_forcing_loss,
        steps=steps,
        lr=lr,
        max_grad_norm=1.0,
    )
    model.eval()
    return history["loss"]


def teacher_forcing_loss(model: Seq2SeqGRU, batch) -> torch.Tensor:
    """Cross-entropy of the logits for ``batch = (source (B, S), target (B, L))``,
    the decoder reading the true previous tokens (``shift_right(target)``)."""
    source, target = batch  # (B, S), (B, L)
    logits, _ = model(source, shift_right(target))  # (B, L, V)
    return F.cross_entropy(logits.flatten(0, 1), target.flatten())


# --8<-- [end:train]


def _greedy_hits(model, length, *, task, num_samples, seed) -> torch.Tensor:
    """Whether each greedily decoded token is right: bool
    ``(num_samples, length)``."""
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    source, target = make_seq2seq_batch(
        num_samples,
        length,
        model.vocab_size,
        task=task,
        generator=generator,
        device=device,
    )
    prediction, _ = model.generate(source)  # (N, L)
    return prediction == target


# --8<-- [start:evaluate]
def accuracy_by_length(
    model: Seq2SeqGRU,
    lengths,
    *,
    task: str = "copy",
    num_samples: int = 256,
    seed: int = 1,
) -> list[float]:
    """Token accuracy of greedy decoding, on ``num_samples`` new inputs each."""
    _check_task(task)
    check_positive_int("num_samples", num_samples)
    return [
        _greedy_hits(model, n, task=task, num_samples=num_samples, seed=seed + n)
        .float()
        .mean()
        .item()
        for n in lengths
    ]


# --8<-- [end:evaluate]


def accuracy_by_position(
    model: Seq2SeqGRU,
    length: int,
    *,
    task: str = "copy",
    num_samples: int = 256,
    seed: int = 1,
) -> list[float]:
    """For sequences of one length: the accuracy of output step 0, 1, ...,
    ``length - 1``."""
    _check_task(task)
    check_positive_int("length", length)
    check_positive_int("num_samples", num_samples)
    hits = _greedy_hits(
        model, length, task=task, num_samples=num_samples, seed=seed + length
    )
    return hits.float().mean(dim=0).tolist()


def run_seq2seq_experiment(
    *,
    attention: bool,
    vocab_size: int = 12,
    hidden_size: int = 48,
    embed_size: int = 16,
    steps: int = 600,
    batch_size: int = 64,
    min_len: int = 4,
    max_len: int = 16,
    eval_lengths=(4, 8, 12, 16, 20),
    task: str = "copy",
    lr: float = 1e-2,
    seed: int = 0,
    device: str = "cpu",
) -> dict:
    """Build, train and evaluate one model; return plain data (for ``cached``).

    Returns a dict with ``state_dict`` (load it into a fresh model of the same
    settings), ``losses``, ``eval_lengths``, ``accuracy`` (one per length) and
    ``num_parameters``.
    """
    torch.manual_seed(seed)  # the initial weights
    model_class = Seq2SeqAttentionGRU if attention else Seq2SeqGRU
    model = model_class(vocab_size, hidden_size, embed_size).to(device)
    losses = train_seq2seq(
        model,
        steps=steps,
        batch_size=batch_size,
        min_len=min_len,
        max_len=max_len,
        task=task,
        lr=lr,
        seed=seed,
    )
    accuracy = accuracy_by_length(model, eval_lengths, task=task, seed=seed + 1)
    return {
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "losses": losses,
        "eval_lengths": list(eval_lengths),
        "accuracy": accuracy,
        "num_parameters": sum(p.numel() for p in model.parameters()),
    }


# --8<-- [start:probe]
def probe_final_state(
    model: Seq2SeqGRU,
    length: int,
    *,
    num_train: int = 2048,
    num_test: int = 512,
    ridge: float = 1.0,
    seed: int = 0,
) -> list[float]:
    """How well each input token can be read back out of the final state alone.

    The encoder of ``model`` (left as it is) reads ``num_train`` random
    sequences of ``length`` symbols. A *linear probe* is then fitted: one
    linear map (with a bias) from the final state ``(H,)`` to a score for
    every token at every input position, by ridge regression onto the one-hot
    tokens — a least-squares fit with an exact solution, so there is no
    training loop and no learning rate. The probe's guess at a position is its
    highest-scoring token.

    Returns the probe's accuracy at input position 0, 1, ..., ``length - 1``,
    on ``num_test`` fresh sequences (chance is ``1 / (vocab_size - 1)``).
    """
    if not isinstance(model, Seq2SeqGRU):
        raise TypeError(
            "model must be a Seq2SeqGRU (or Seq2SeqAttentionGRU), "
            f"got {type(model).__name__}"
        )
    for name, value in (
        ("length", length),
        ("num_train", num_train),
        ("num_test", num_test),
    ):
        check_positive_int(name, value)
    if not ridge >= 0:
        raise ValueError(f"ridge must be >= 0, got {ridge}")
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    features, tokens = [], []
    for n in (num_train, num_test):
        source, _ = make_seq2seq_batch(
            n, length, model.vocab_size, generator=generator, device=device
        )  # (N, S)
        with torch.no_grad():
            final = model.encode(source)[1][0].double()  # (N, H)
        features.append(F.pad(final, (0, 1), value=1.0))  # (N, H + 1): bias
        tokens.append(source)
    x, x_test = features
    one_hot = F.one_hot(tokens[0], model.vocab_size).flatten(1).double()
    # (N, S * V): the targets, one block of V per input position
    gram = x.T @ x + ridge * torch.eye(x.size(1), dtype=x.dtype, device=device)
    probe = torch.linalg.solve(gram, x.T @ one_hot)  # (H + 1, S * V)
    scores = (x_test @ probe).view(num_test, length, model.vocab_size)
    guess = scores.argmax(dim=-1)  # (N, S)
    return (guess == tokens[1]).float().mean(dim=0).tolist()


# --8<-- [end:probe]
