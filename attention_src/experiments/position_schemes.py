"""One small model, five ways to tell it where each token is: the experiments of
the rotary-position, grouped-query and windows-and-biases chapters.

``PositionTagger`` is the one-layer tagger of the positional-encoding chapter
(embedding, one self-attention layer with a residual connection, a linear
read-out), with the position scheme as a setting: a sinusoidal or learned table
added to the tokens, RoPE inside the attention, ALiBi biases on the scores, or
nothing. Its attention is ``GroupedQueryAttention``, so it can share key/value
heads, and it can be causal. The task generalises the previous-token task: at
every position, name the tokens ``offsets`` positions back.
"""

from __future__ import annotations

import torch
from torch import nn

from ..alibi import alibi_bias
from ..gqa import GroupedQueryAttention
from ..masks import causal_mask
from ..positional import LearnedPositionalEmbedding, PositionalEncoding
from ..rope import RotaryEmbedding
from ..validate import check_positive_int, check_token_ids
from ..windows import sliding_window_mask
from .tagger import IGNORE_INDEX, tagging_loss
from .training import train

__all__ = [
    "POSITION_SCHEMES",
    "offset_batch",
    "tagger_attention",
    "tagger_mask",
    "PositionTagger",
    "train_position_tagger",
    "offset_accuracy",
    "run_position_experiment",
]

POSITION_SCHEMES = ("sinusoidal", "learned", "rope", "alibi", "none")


def _check_offsets(offsets) -> tuple[int, ...]:
    offsets = tuple(offsets)
    if not offsets or not all(
        isinstance(o, int) and not isinstance(o, bool) and o > 0 for o in offsets
    ):
        raise ValueError(f"offsets must be positive ints, got {offsets!r}")
    return offsets


# --8<-- [start:offset_batch]
def offset_batch(
    batch_size: int,
    length: int,
    vocab_size: int,
    offsets=(1,),
    *,
    generator: torch.Generator | None = None,
    device=None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random ids ``(B, L)`` and targets ``(B, L, R)``, one per offset: target
    ``r`` at position ``t`` is the token at ``t - offsets[r]``, or
    ``IGNORE_INDEX`` where that is before the start.

    With ``offsets=(1,)`` this is the previous-token task; the ids are drawn
    exactly as ``previous_token_batch`` draws them.
    """
    check_positive_int("batch_size", batch_size)
    check_positive_int("length", length)
    check_positive_int("vocab_size", vocab_size)
    offsets = _check_offsets(offsets)
    tokens = torch.randint(
        vocab_size, (batch_size, length), generator=generator, device=device
    )  # (B, L)
    targets = torch.full(
        (batch_size, length, len(offsets)), IGNORE_INDEX, device=tokens.device
    )  # (B, L, R)
    for r, o in enumerate(offsets):
        targets[:, o:, r] = tokens[:, :-o]  # shifted right by o positions
    return tokens, targets


# --8<-- [end:offset_batch]


# --8<-- [start:tagger_attention]
def tagger_attention(
    d_model: int, num_heads: int, num_kv_heads: int | None = None
) -> GroupedQueryAttention:
    """The tagger's attention layer: ``H`` query heads sharing ``G`` key/value
    heads (``None``: G = H, plain multi-head attention), with biases; it turns
    its queries and keys by the angles it is given (``rope=``)."""
    G = num_heads if num_kv_heads is None else num_kv_heads
    return GroupedQueryAttention(d_model, num_heads, G, bias=True)


# --8<-- [end:tagger_attention]


# --8<-- [start:tagger_mask]
def tagger_mask(
    positions: str,
    num_heads: int,
    length: int,
    *,
    causal: bool = False,
    window: int | None = None,
    device=None,
    dtype=None,
) -> torch.Tensor | None:
    """What the tagger's attention gets as ``mask`` for ``length`` tokens:
    ``None`` (every key), a causal mask or, with ``window``, a causal window
    (bool ``(L, L)``); with ``positions="alibi"``, the float bias
    ``(1, H, L, L)``, ``-inf`` where causality forbids."""
    L = length
    allowed = None
    if window is not None:
        allowed = sliding_window_mask(L, L, window, device=device)  # (L, L)
    elif causal:
        allowed = causal_mask(L, device=device)  # (L, L)
    if positions != "alibi":
        return allowed
    bias = alibi_bias(num_heads, L, L, device=device, dtype=dtype)  # (H, L, L)
    if allowed is not None:
        bias = bias.masked_fill(~allowed, float("-inf"))
    return bias[None]  # (1, H, L, L)


# --8<-- [end:tagger_mask]


# --8<-- [start:position_tagger]
class PositionTagger(nn.Module):
    """Ids ``(B, L)`` -> logits ``(B, L, R, V)``: ``R`` predictions per token.

    Args:
        vocab_size: V.
        d_model: D.
        num_heads: H, query heads.
        positions: one of ``POSITION_SCHEMES``: ``"sinusoidal"`` or
            ``"learned"`` (a table added to the tokens, up to ``max_len``),
            ``"rope"`` (queries and keys rotated), ``"none"``, or
            ``"alibi"`` (the windows chapter's).
        max_len: the table's length; only for the two table schemes.
        num_kv_heads: G, key/value heads (``None``: G = H); for the
            grouped-query chapter's experiment.
        causal: whether each position sees only itself and earlier ones;
            ``False``: every token sees every other.
        window: with ``causal``, the last ``window`` positions only; for the
            windows chapter's experiment (``None``: no window).
        num_outputs: R, the number of predictions per position.
        rope_base: the RoPE base.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        num_heads: int,
        positions: str = "rope",
        *,
        max_len: int | None = None,
        num_kv_heads: int | None = None,
        causal: bool = False,
        window: int | None = None,
        num_outputs: int = 1,
        rope_base: float = 10000.0,
    ):
        super().__init__()
        _check_scheme(positions, max_len)
        if window is not None:
            check_positive_int("window", window)
            if not causal:
                raise ValueError("a window needs causal=True (it is a causal band)")
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("num_outputs", num_outputs)
        self.vocab_size, self.kind, self.causal = vocab_size, positions, causal
        self.window = window
        self.num_heads, self.num_outputs = num_heads, num_outputs
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.positions = nn.Identity()
        if positions == "sinusoidal":
            self.positions = PositionalEncoding(d_model, max_len=max_len)
        elif positions == "learned":
            self.positions = LearnedPositionalEmbedding(d_model, max_len)
        self.attn = tagger_attention(d_model, num_heads, num_kv_heads)
        # RoPE: the model computes the angles, the attention layer turns q and k
        self.rotary = None
        if positions == "rope":
            self.rotary = RotaryEmbedding(self.attn.head_dim, rope_base)
        self.head = nn.Linear(d_model, num_outputs * vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        check_token_ids("tokens", tokens, self.vocab_size)
        x = self.positions(self.embedding(tokens))  # (B, L, D)
        rope = None
        if self.rotary is not None:  # the angles of positions 0 .. L - 1, once
            positions = torch.arange(x.size(1), device=x.device)  # (L,)
            rope = self.rotary(positions, dtype=x.dtype)  # (cos, sin), (L, Dh) each
        out, _ = self.attn(x, self.scores_mask(x), rope=rope)
        logits = self.head(x + out)  # (B, L, R * V)
        return logits.unflatten(-1, (self.num_outputs, self.vocab_size))

    def scores_mask(self, x: torch.Tensor) -> torch.Tensor | None:
        """The ``mask`` for ``x`` ``(B, L, D)``: ``tagger_mask`` with this
        model's settings."""
        return tagger_mask(
            self.kind,
            self.num_heads,
            x.size(1),
            causal=self.causal,
            window=self.window,
            device=x.device,
            dtype=x.dtype,
        )


# --8<-- [end:position_tagger]


def _check_scheme(positions, max_len) -> None:
    if positions not in POSITION_SCHEMES:
        raise ValueError(
            f"positions must be one of {POSITION_SCHEMES}, got {positions!r}"
        )
    if positions in ("sinusoidal", "learned"):
        if max_len is None:
            raise ValueError(f'positions="{positions}" needs max_len (a table)')
        check_positive_int("max_len", max_len)


def train_position_tagger(
    *,
    positions: str,
    vocab_size: int,
    d_model: int,
    num_heads: int,
    max_train_len: int,
    steps: int,
    batch_size: int,
    lr: float,
    seed: int,
    max_len: int | None = None,
    num_kv_heads: int | None = None,
    causal: bool = False,
    window: int | None = None,
    offsets=(1,),
    rope_base: float = 10000.0,
    device=None,
) -> dict:
    """Train a ``PositionTagger`` as ``train_tagger`` trains a
    ``OneLayerTagger``: ``train`` (AdamW), a fresh batch each step, of one
    length drawn from ``2 .. max_train_len``, from the same random streams (so
    with ``offsets=(1,)`` the data are the same).

    Returns ``{"state_dict", "losses", "model_kwargs"}``, plain data.
    """
    check_positive_int("steps", steps)
    offsets = _check_offsets(offsets)
    if max_train_len < 2 or (max_len is not None and max_train_len > max_len):
        raise ValueError(
            f"max_train_len must be in [2, max_len={max_len}], got {max_train_len}"
        )
    torch.manual_seed(seed)  # the model's initial weights
    generator = torch.Generator(device=device).manual_seed(seed)  # the data
    model_kwargs = dict(
        vocab_size=vocab_size,
        d_model=d_model,
        num_heads=num_heads,
        positions=positions,
        max_len=max_len,
        num_kv_heads=num_kv_heads,
        causal=causal,
        window=window,
        num_outputs=len(offsets),
        rope_base=rope_base,
    )
    model = PositionTagger(**model_kwargs).to(device)

    def next_batch():
        length = int(
            torch.randint(
                2, max_train_len + 1, (1,), generator=generator, device=device
            )
        )
        return offset_batch(
            batch_size,
            length,
            vocab_size,
            offsets,
            generator=generator,
            device=device,
        )  # (B, L), (B, L, R)

    losses = train(model, next_batch, tagging_loss, steps=steps, lr=lr)["loss"]
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return {"state_dict": state, "losses": losses, "model_kwargs": model_kwargs}


@torch.no_grad()
def offset_accuracy(
    model: PositionTagger,
    lengths,
    offsets=(1,),
    *,
    num_sequences: int = 256,
    seed: int = 0,
    device=None,
) -> list[float]:
    """For each length, the fraction of scored targets (all offsets) of
    ``num_sequences`` fresh sequences that the model predicts (argmax)."""
    check_positive_int("num_sequences", num_sequences)
    offsets = _check_offsets(offsets)
    generator = torch.Generator(device=device).manual_seed(seed)
    accuracies = []
    for length in lengths:
        if isinstance(length, bool) or not isinstance(length, int):
            raise TypeError(f"every length must be an int, got {length!r}")
        if length <= max(offsets):
            raise ValueError(
                f"length {length} has no target for offset {max(offsets)}"
            )
        tokens, targets = offset_batch(
            num_sequences,
            length,
            model.vocab_size,
            offsets,
            generator=generator,
            device=device,
        )
        predicted = model(tokens).argmax(dim=-1)  # (B, L, R)
        scored = targets != IGNORE_INDEX
        accuracies.append((predicted == targets)[scored].float().mean().item())
    return accuracies


def run_position_experiment(
    *,
    eval_lengths,
    num_sequences: int = 256,
    eval_seed: int = 1234,
    **train_settings,
) -> dict:
    """``train_position_tagger(**train_settings)``, then ``offset_accuracy`` at
    ``eval_lengths``: its result plus ``"accuracy"`` and ``"eval_lengths"``.
    Plain data, for ``attention_src.machinery.cached``."""
    device = train_settings.get("device")
    run = train_position_tagger(**train_settings)
    model = PositionTagger(**run["model_kwargs"]).to(device)
    model.load_state_dict(run["state_dict"])
    run["eval_lengths"] = list(eval_lengths)
    run["accuracy"] = offset_accuracy(
        model,
        run["eval_lengths"],
        train_settings.get("offsets", (1,)),
        num_sequences=num_sequences,
        seed=eval_seed,
        device=device,
    )
    return run
