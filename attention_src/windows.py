"""Sliding-window attention (as in Longformer and Mistral).

Each query sees only the last ``window`` positions, itself included: a band
along the diagonal of the causal mask. The cost per query is then at most
``window`` keys instead of the whole prefix, and the KV cache needs to keep
only ``window`` positions per layer. A stack of such layers still reaches
further: every layer extends the receptive field by ``window - 1`` positions.
"""

from __future__ import annotations

import math

import torch

from .validate import (
    check_floating,
    check_last_queries,
    check_positive_int,
    check_same_dtype_device,
    check_tensor,
    shape_str,
)

__all__ = ["sliding_window_mask", "banded_attention", "receptive_field"]


def _check_window_sizes(size_q, size_k, window) -> None:
    check_last_queries(size_q, size_k)
    check_positive_int("window", window)


# --8<-- [start:sliding_window_mask]
def sliding_window_mask(
    size_q: int,
    size_k: int,
    window: int,
    *,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Bool mask ``(L, S)``: query ``i``, at absolute position
    ``p = S - L + i``, may attend key ``j`` iff ``p - window < j <= p``.

    The alignment is bottom-right, like ``causal_mask(L, S)``: with ``S - L``
    cached keys the ``L`` new queries are the last positions. Each query sees
    at most ``window`` keys, itself included; with ``window >= S`` this is the
    causal mask.

    Args:
        size_q: L, the number of queries.
        size_k: S, the number of keys, at least L.
        window: how many positions each query sees, itself included.
        device: where to create the mask.
    """
    _check_window_sizes(size_q, size_k, window)
    p = torch.arange(size_k - size_q, size_k, device=device)[:, None]  # (L, 1)
    j = torch.arange(size_k, device=device)[None, :]  # (1, S)
    return (j <= p) & (j > p - window)  # (L, S)


# --8<-- [end:sliding_window_mask]


def _check_band(q, k, v) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_floating(name, t)
    check_same_dtype_device(q=q, k=k, v=v)
    if q.dim() < 2 or q.shape != k.shape or k.shape != v.shape:
        raise ValueError(
            "banded_attention is self-attention: q, k and v must have the same "
            f"shape (..., L, Dh), got q {shape_str(q.shape)}, k "
            f"{shape_str(k.shape)}, v {shape_str(v.shape)}"
        )


# --8<-- [start:banded_attention]
def banded_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int
) -> torch.Tensor:
    """Causal sliding-window self-attention that computes only the band.

    ``q``, ``k``, ``v`` are ``(..., L, Dh)`` for the same ``L`` positions. The
    queries go in blocks of ``window``; a block only needs the keys from
    ``window - 1`` before its first query to its last query, so each block
    costs ``window x (2 window - 1)`` scores instead of ``window x L``. Equal
    to ``F.scaled_dot_product_attention`` with ``sliding_window_mask(L, L,
    window)``; returns the output ``(..., L, Dh)``.
    """
    _check_band(q, k, v)
    check_positive_int("window", window)
    L = q.size(-2)
    scale = 1.0 / math.sqrt(q.size(-1))
    band = sliding_window_mask(L, L, window, device=q.device)  # (L, L)
    out = []
    for start in range(0, L, window):
        stop = min(start + window, L)  # queries start .. stop - 1
        first = max(0, start - window + 1)  # the oldest key any of them sees
        scores = q[..., start:stop, :] @ k[..., first:stop, :].transpose(-2, -1)
        scores = scores * scale  # (..., <= window, <= 2 window - 1)
        allowed = band[start:stop, first:stop]  # the band, cut to this block
        scores = scores.masked_fill(~allowed, float("-inf"))
        out.append(scores.softmax(dim=-1) @ v[..., first:stop, :])
    return torch.cat(out, dim=-2)  # (..., L, Dh)


# --8<-- [end:banded_attention]


def _check_reach(mask, num_layers) -> None:
    check_positive_int("num_layers", num_layers)
    check_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask must be a square bool (L, L) mask, got dtype {mask.dtype}"
        )
    if mask.dim() != 2 or mask.size(0) != mask.size(1):
        raise ValueError(
            "mask must be a square bool (L, L) mask, got shape "
            f"{shape_str(mask.shape)}"
        )


# --8<-- [start:receptive_field]
def receptive_field(mask: torch.Tensor, num_layers: int) -> torch.Tensor:
    """Which inputs can reach which outputs after ``num_layers`` layers that
    each attend with the square bool ``mask`` ``(L, L)``: bool ``(L, L)``.

    Entry ``[i, j]`` is True when some path ``j -> ... -> i`` of allowed
    attention steps exists, one step per layer (the residual connection is the
    step from a position to itself, which every causal window allows).
    """
    _check_reach(mask, num_layers)
    step = mask.to(torch.float32)  # (L, L): 1 where one layer connects
    reach = step
    for _ in range(num_layers - 1):
        reach = ((reach @ step) > 0).to(torch.float32)  # one more layer
    return reach > 0  # (L, L)


# --8<-- [end:receptive_field]
