"""Synthetic tasks whose correct attention pattern is known in advance, a tiny
encoder to train on them, and tools that compare its attention maps with that
pattern -- and with what actually changes its answers.

Every task maps a sequence of token ids to a sequence of the same length, and
every output position ``i`` must copy the token at one input position
``expected[i]``:

- ``reversal``: ``expected[i] = L - 1 - i`` (the anti-diagonal), for every input;
- ``previous_token``: ``expected[i] = i - 1``, and ``L - 1`` for ``i = 0`` (the
  sub-diagonal, wrapping around), for every input;
- ``sorting``: ``expected[i]`` = the position of the ``i``-th smallest token,
  which depends on the input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from ..encoder import Encoder
from ..validate import check_ndim, check_positive_int, check_tensor, shape_str
from .training import train

__all__ = [
    "TASKS",
    "TaskBatch",
    "permutation_batch",
    "reversal_batch",
    "rotate_batch",
    "sorting_batch",
    "task_batch",
    "expected_pattern",
    "TaskModel",
    "init_task_model",
    "train_task_model",
    "task_loss",
    "load_task_model",
    "weight_on_expected",
    "argmax_match",
    "token_influence",
    "zero_values",
    "layer_input_dependence",
]

TASKS = ("reversal", "previous_token", "sorting")


# --8<-- [start:tasks]
class TaskBatch(NamedTuple):
    """One batch of a task: three ``(B, L)`` integer tensors."""

    inputs: torch.Tensor  # (B, L) token ids
    targets: torch.Tensor  # (B, L) the token each output position must produce
    expected: torch.Tensor  # (B, L) the input position each output must read


def permutation_batch(
    source, batch_size, vocab_size, *, generator=None, device=None
):
    """Output ``i`` copies input position ``source[i]``, the same for every
    example."""
    source = _check_source(source, batch_size, vocab_size, device)  # (L,) positions
    L = source.numel()
    inputs = torch.randint(
        vocab_size, (batch_size, L), generator=generator, device=device
    )
    # (B, L): same row for every example
    expected = source.expand(batch_size, L).clone()
    return TaskBatch(inputs, inputs.gather(1, expected), expected)


def reversal_batch(batch_size, seq_len, vocab_size, *, generator=None, device=None):
    """Output ``i`` is input ``L - 1 - i``: the expected map is the
    anti-diagonal."""
    check_positive_int("seq_len", seq_len)
    source = torch.arange(seq_len - 1, -1, -1, device=device)  # L-1, ..., 1, 0
    return permutation_batch(
        source, batch_size, vocab_size, generator=generator, device=device
    )


def rotate_batch(
    batch_size, seq_len, vocab_size, shift=1, *, generator=None, device=None
):
    """Output ``i`` is input ``i - shift``, wrapping round: with ``shift=1`` every
    output reads the previous token, and output 0 reads the last one."""
    check_positive_int("seq_len", seq_len)
    # shift=1: L-1, 0, ..., L-2
    source = (torch.arange(seq_len, device=device) - shift) % seq_len
    return permutation_batch(
        source, batch_size, vocab_size, generator=generator, device=device
    )


def sorting_batch(batch_size, seq_len, vocab_size, *, generator=None, device=None):
    """``seq_len`` distinct tokens; output ``i`` is the ``i``-th smallest of them.

    Distinct tokens make the expected key unique: the position of that token.
    """
    _check_sorting(batch_size, seq_len, vocab_size)
    shuffled = torch.rand(
        batch_size, vocab_size, generator=generator, device=device
    ).argsort(-1)
    inputs = shuffled[:, :seq_len]  # (B, L): L different ids per row
    targets, expected = inputs.sort(dim=-1)  # expected[b, i] = where rank i sits
    return TaskBatch(inputs, targets, expected)


# --8<-- [end:tasks]


def _check_source(source, batch_size, vocab_size, device) -> torch.Tensor:
    check_positive_int("batch_size", batch_size)
    check_positive_int("vocab_size", vocab_size)
    source = torch.as_tensor(source, device=device)
    if source.numel() == 0:
        raise ValueError(
            "source must hold at least one position, got an empty sequence"
        )
    if (
        source.is_floating_point()
        or source.is_complex()
        or source.dtype == torch.bool
    ):
        raise TypeError(
            f"source must hold integer positions, got dtype {source.dtype}"
        )
    check_ndim("source", source, 1, "(L,)")
    L = source.numel()
    if source.min() < 0 or source.max() >= L:
        raise ValueError(
            f"source must hold positions in [0, {L}) for a sequence of length {L}, "
            f"got {source.tolist()}"
        )
    return source


def _check_sorting(batch_size, seq_len, vocab_size) -> None:
    for name, value in (
        ("batch_size", batch_size),
        ("seq_len", seq_len),
        ("vocab_size", vocab_size),
    ):
        check_positive_int(name, value)
    if vocab_size < seq_len:
        raise ValueError(
            f"sorting draws seq_len distinct tokens, so vocab_size ({vocab_size}) "
            f"must be >= seq_len ({seq_len})"
        )


_BATCHES = {
    "reversal": reversal_batch,
    "previous_token": rotate_batch,
    "sorting": sorting_batch,
}


def task_batch(
    task: str,
    batch_size: int,
    seq_len: int,
    vocab_size: int,
    *,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> TaskBatch:
    """A batch of ``task`` by name (one of ``TASKS``).

    Args:
        task: ``"reversal"``, ``"previous_token"`` (``rotate_batch`` with
            ``shift=1``) or ``"sorting"``.
        batch_size: B.
        seq_len: L.
        vocab_size: V, the number of token ids; sorting needs ``V >= L``.
        generator: a ``torch.Generator`` for reproducible batches.
        device: where to create the tensors.
    """
    if task not in _BATCHES:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    return _BATCHES[task](
        batch_size, seq_len, vocab_size, generator=generator, device=device
    )


def expected_pattern(
    expected: torch.Tensor, num_keys: int | None = None
) -> torch.Tensor:
    """The map a perfect lookup would draw: ``(B, L)`` positions -> one-hot
    ``(B, L, S)``."""
    check_tensor("expected", expected)
    check_ndim("expected", expected, 2, "(B, L)")
    S = expected.size(1) if num_keys is None else num_keys
    return F.one_hot(expected, S).float()  # (B, L, S)


# --8<-- [start:model]
class TaskModel(nn.Module):
    """Ids ``(B, L)`` -> ``(logits (B, L, V), [weights (B, H, L, L) per layer])``.

    An ``Encoder`` (embedding, sinusoidal positions, post-norm layers, no
    dropout) and one linear layer that reads a token out of every position.
    """

    def __init__(
        self, vocab_size, d_model, num_heads, num_layers, d_ff, max_len=64
    ):
        super().__init__()
        self.encoder = Encoder(
            vocab_size,
            d_model,
            num_heads,
            num_layers,
            d_ff,
            dropout=0.0,
            max_len=max_len,
        )
        # The encoder multiplies embeddings by sqrt(D); starting them at std
        # 1/sqrt(D) makes a token vector about as long as the positional
        # encoding added to it.
        nn.init.normal_(self.encoder.embedding.weight, std=d_model**-0.5)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor):
        hidden, weights = self.encoder(tokens)  # (B, L, D), [(B, H, L, L)] * layers
        return self.head(hidden), weights  # (B, L, V)


# --8<-- [end:model]


def init_task_model(
    model_kwargs: dict, seed: int, device: torch.device | str | None = None
) -> TaskModel:
    """The model exactly as training starts it: ``TaskModel(**model_kwargs)``
    initialised under ``torch.manual_seed(seed)``, in eval mode."""
    torch.manual_seed(seed)
    return TaskModel(**model_kwargs).to(device).eval()


# --8<-- [start:train]
def train_task_model(
    *,
    task: str,
    seq_len: int,
    vocab_size: int,
    d_model: int,
    num_heads: int,
    num_layers: int,
    d_ff: int,
    steps: int,
    batch_size: int,
    lr: float,
    seed: int,
    device: str | None = None,
) -> dict:
    """Train a ``TaskModel`` with cross-entropy at every position, a fresh batch
    per step. Returns plain data for ``attention_src.machinery.cached``:
    ``{"state_dict", "losses", "model_kwargs", "task", "seq_len", "seed"}``."""
    check_positive_int("steps", steps)
    model_kwargs = dict(
        vocab_size=vocab_size,
        d_model=d_model,
        num_heads=num_heads,
        num_layers=num_layers,
        d_ff=d_ff,
        max_len=seq_len,
    )
    model = init_task_model(model_kwargs, seed, device)  # weights: seeded
    generator = torch.Generator(device=device).manual_seed(seed)  # data: seeded

    def next_batch():
        return task_batch(
            task,
            batch_size,
            seq_len,
            vocab_size,
            generator=generator,
            device=device,
        )

    losses = train(model, next_batch, task_loss, steps=steps, lr=lr)["loss"]
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return {
        "state_dict": state,
        "losses": losses,
        "model_kwargs": model_kwargs,
        "task": task,
        "seq_len": seq_len,
        "seed": seed,
    }


def task_loss(model: TaskModel, batch: TaskBatch) -> torch.Tensor:
    """Cross-entropy of the model's logits ``(B, L, V)`` at every position."""
    logits, _ = model(batch.inputs)  # (B, L, V)
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)), batch.targets.reshape(-1)
    )


# --8<-- [end:train]


def load_task_model(
    run: dict, device: torch.device | str | None = None
) -> TaskModel:
    """The trained model from ``train_task_model``'s result, in eval mode."""
    model = TaskModel(**run["model_kwargs"]).to(device)
    model.load_state_dict(run["state_dict"])
    return model.eval()


def _check_pair(weights, expected) -> None:
    check_tensor("weights", weights)
    check_tensor("expected", expected)
    check_ndim("weights", weights, 4, "(B, H, L, S)")
    check_ndim("expected", expected, 2, "(B, L)")
    B, _, L, _ = weights.shape
    if expected.shape != (B, L):
        raise ValueError(
            f"expected must be (B, L) = ({B}, {L}) to match weights "
            f"{shape_str(weights.shape)}, got {shape_str(expected.shape)}"
        )


# --8<-- [start:match]
def weight_on_expected(
    weights: torch.Tensor, expected: torch.Tensor
) -> torch.Tensor:
    """Per head ``(H,)``: the mean weight each query puts on its expected key.

    ``weights`` is ``(B, H, L, S)``, ``expected`` is ``(B, L)`` key positions.
    1 for a perfect lookup; 1/S for uniform weights.
    """
    _check_pair(weights, expected)
    # (B, H, L, 1)
    index = expected[:, None, :, None].expand(-1, weights.size(1), -1, 1)
    return weights.gather(-1, index).squeeze(-1).mean(dim=(0, 2))  # (H,)


def argmax_match(weights: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Per head ``(H,)``: the fraction of queries whose largest weight is on the
    expected key."""
    _check_pair(weights, expected)
    hits = weights.argmax(dim=-1) == expected[:, None, :]  # (B, H, L)
    return hits.float().mean(dim=(0, 2))  # (H,)


# --8<-- [end:match]


# --8<-- [start:influence]
def _replace(
    inputs: torch.Tensor,
    j: int,
    V: int,
    absent_only: bool,
    generator: torch.Generator | None,
) -> torch.Tensor:
    """A copy of ``inputs`` (B, L) with a different token at position ``j`` in
    every row: drawn uniformly from the ``V - 1`` other tokens, or, with
    ``absent_only``, from the tokens not in that row."""
    B = inputs.size(0)
    changed = inputs.clone()
    if not absent_only:
        shift = torch.randint(1, V, (B,), generator=generator, device=inputs.device)
        changed[:, j] = (inputs[:, j] + shift) % V
        return changed
    absent = F.one_hot(inputs, V).sum(dim=1) == 0  # (B, V): not in the row
    _check_room(absent, inputs)
    pick = torch.multinomial(absent.float(), 1, generator=generator)  # (B, 1)
    changed[:, j] = pick[:, 0]
    return changed


@torch.no_grad()
def token_influence(
    model: Callable,
    inputs: torch.Tensor,
    *,
    generator: torch.Generator | None = None,
    absent_only: bool = False,
) -> torch.Tensor:
    """``(L, L)``: entry ``(i, j)`` is the fraction of examples whose prediction
    at output ``i`` changes when input token ``j`` is replaced by another token.

    ``model(inputs)`` must return ``(logits (B, L, V), ...)``; a replacement is
    drawn uniformly from the ``V - 1`` other tokens, or with ``absent_only``
    from the tokens not in the sequence (for tasks whose tokens are distinct,
    such as sorting).
    """
    check_tensor("inputs", inputs)
    check_ndim("inputs", inputs, 2, "(B, L)")
    logits = model(inputs)[0]  # (B, L, V)
    before, V = logits.argmax(dim=-1), logits.size(-1)  # (B, L)
    L = inputs.size(1)
    influence = torch.zeros(L, L, device=inputs.device)
    for j in range(L):
        # a different token at position j
        changed = _replace(inputs, j, V, absent_only, generator)
        after = model(changed)[0].argmax(dim=-1)  # (B, L)
        # column j: every output
        influence[:, j] = (after != before).float().mean(dim=0)
    return influence


@contextmanager
def zero_values(
    model: TaskModel, layer: int, positions: Sequence[int], head: int | None = None
) -> Iterator[None]:
    """Inside the ``with`` block, the value vectors at ``positions`` of one layer
    (one head, or all) are zero. Queries and keys -- so the weights -- are
    untouched."""
    attn = model.encoder.layers[layer].self_attn
    columns = (
        slice(None)
        if head is None
        else slice(head * attn.d_head, (head + 1) * attn.d_head)
    )

    def hook(module, args, value):  # value: (B, S, D), the output of v_proj
        value = value.clone()
        value[:, list(positions), columns] = 0.0
        return value

    handle = attn.v_proj.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


# --8<-- [end:influence]


# --8<-- [start:dependence]
@torch.no_grad()
def layer_input_dependence(
    model: TaskModel,
    inputs: torch.Tensor,
    layer: int,
    *,
    generator: torch.Generator | None = None,
    absent_only: bool = False,
) -> torch.Tensor:
    """``(L, L)``: row ``j`` says how much the vector at position ``j`` entering
    ``layer`` (the one its keys and values are made from) changes when each
    input token ``k`` is replaced (as in ``token_influence``, ``absent_only``
    included); rows are normalised to sum to 1.

    For layer 0 the vector at ``j`` is token ``j`` plus its position, so the
    matrix is the identity; from layer 1 on it is a mixture.
    """
    check_tensor("inputs", inputs)
    check_ndim("inputs", inputs, 2, "(B, L)")
    captured = []
    target = model.encoder.layers[layer]
    handle = target.register_forward_pre_hook(
        lambda module, args: captured.append(args[0])
    )
    V = model.encoder.vocab_size
    try:
        model(inputs)
        before = captured.pop()  # (B, L, D)
        L = inputs.size(1)
        change = torch.zeros(L, L, device=inputs.device)
        for k in range(L):
            model(_replace(inputs, k, V, absent_only, generator))
            after = captured.pop()  # (B, L, D)
            # (L,): every position
            change[:, k] = (after - before).norm(dim=-1).mean(dim=0)
    finally:
        handle.remove()
    return change / change.sum(dim=-1, keepdim=True)


# --8<-- [end:dependence]


def _check_room(absent: torch.Tensor, inputs: torch.Tensor) -> None:
    if not absent.any(dim=-1).all():
        raise ValueError(
            f"absent_only=True needs a token missing from every row of inputs, "
            f"but a row of inputs {shape_str(inputs.shape)} holds all "
            f"{absent.size(-1)} tokens"
        )
