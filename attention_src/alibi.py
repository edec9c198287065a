"""ALiBi: attention with linear biases (Press, Smith and Lewis, 2022).

No position vectors at all: each head adds ``-slope * distance`` to the score
of every key, so far keys are penalised in proportion to how far they are.
The slopes are fixed, a geometric sequence that gives every head its own
reach, from nearly local to nearly global. The bias depends only on the
distance, so a longer sequence than in training looks, near each query, like
a training sequence.

Here too, the other thing a model may do to its scores before the softmax:
soft-capping (Gemma 2), which squashes them smoothly into ``(-cap, cap)``.
"""

from __future__ import annotations

import torch

from .validate import check_floating, check_last_queries, check_positive_int

__all__ = ["alibi_slopes", "alibi_bias", "soft_cap"]


def _power_of_two_slopes(n: int) -> list[float]:
    start = 2.0 ** (-8.0 / n)  # the first slope, and the ratio between slopes
    return [start ** (i + 1) for i in range(n)]


# --8<-- [start:alibi_slopes]
def alibi_slopes(num_heads: int) -> torch.Tensor:
    """ALiBi's slopes ``(H,)`` in float64.

    For ``H`` a power of two, the paper's: ``2^(-8/H), 2^(-16/H), ..., 2^(-8)``.
    Otherwise those of the authors' ``get_slopes`` code (as BLOOM uses them):
    the slopes of the largest power of two ``n < H``, followed by every other
    slope of ``2 n`` heads (``2^(-4/n), 2^(-12/n), ...``) until there are ``H``.
    """
    check_positive_int("num_heads", num_heads)
    n = 1 << (num_heads.bit_length() - 1)  # the largest power of 2 <= H
    slopes = _power_of_two_slopes(n)
    if n < num_heads:  # fill in from the sequence of twice as many heads
        slopes += _power_of_two_slopes(2 * n)[0::2][: num_heads - n]
    return torch.tensor(slopes, dtype=torch.float64)  # (H,)


# --8<-- [end:alibi_slopes]


def _check_bias_sizes(num_heads, size_q, size_k) -> None:
    check_positive_int("num_heads", num_heads)
    check_last_queries(size_q, size_k)


# --8<-- [start:alibi_bias]
def alibi_bias(
    num_heads: int,
    size_q: int,
    size_k: int,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """The float bias ``(H, L, S)`` to add to the scores:
    ``bias[h, i, j] = -slope_h * |p - j|`` with ``p = S - L + i`` the absolute
    position of query ``i`` (bottom-right, as the causal mask aligns).

    With a causal mask only ``j <= p`` counts, where this is
    ``-slope_h * (p - j)``: zero for the query's own key, one slope less per
    step back. Pass it as a float mask (it is added to the scores).
    """
    _check_bias_sizes(num_heads, size_q, size_k)
    p = torch.arange(size_k - size_q, size_k, device=device)[:, None]  # (L, 1)
    j = torch.arange(size_k, device=device)[None, :]  # (1, S)
    distance = (p - j).abs().to(torch.float64)  # (L, S)
    slopes = alibi_slopes(num_heads).to(device)  # (H,)
    bias = -slopes[:, None, None] * distance  # (H, L, S)
    return bias.to(torch.float32 if dtype is None else dtype)


# --8<-- [end:alibi_bias]


# --8<-- [start:soft_cap]
def soft_cap(scores: torch.Tensor, cap: float) -> torch.Tensor:
    """``cap * tanh(scores / cap)``: the scores squashed smoothly into
    ``(-cap, cap)``, nearly unchanged where they are small (Gemma 2 caps its
    attention scores at 50).

    Apply it to the scaled scores *before* the mask: a masked ``-inf`` would
    come out as ``-cap``, a finite score that still gets weight.

    Args:
        scores: any floating-point tensor, e.g. ``(B, H, L, S)``.
        cap: the bound, a number > 0.
    """
    _check_cap(scores, cap)
    return cap * torch.tanh(scores / cap)  # same shape, |result| <= cap


# --8<-- [end:soft_cap]


def _check_cap(scores, cap) -> None:
    check_floating("scores", scores)
    if isinstance(cap, bool) or not isinstance(cap, (int, float)):
        raise TypeError(f"cap must be a number > 0, got {cap!r}")
    if not cap > 0 or cap == float("inf"):
        raise ValueError(f"cap must be a finite number > 0, got {cap!r}")
