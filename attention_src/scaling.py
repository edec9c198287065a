"""Measurements behind "why divide by sqrt(d_k)": how big q·k gets, and what that
does to softmax.

For ``q`` and ``k`` with independent entries of mean 0 and variance 1,
``q·k`` is a sum of ``d_k`` independent products of variance 1, so its
variance is ``d_k``. Large scores make softmax saturate: one weight goes to 1,
the entropy of the weights goes to 0, and so does the softmax Jacobian
``diag(p) - p p^T`` through which every gradient reaching the scores passes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .softmax import softmax
from .validate import check_floating, check_positive_int

__all__ = [
    "random_dot_products",
    "softmax_entropy",
    "softmax_jacobian",
    "softmax_jacobian_norm",
    "variance_sweep",
    "saturation_sweep",
]


def _check_d_ks(d_ks: Sequence[int]) -> list[int]:
    if (
        isinstance(d_ks, (str, bytes))
        or not isinstance(d_ks, Sequence)
        or len(d_ks) == 0
    ):
        raise TypeError(f"d_ks must be a non-empty list of ints, got {d_ks!r}")
    for d_k in d_ks:
        check_positive_int("each d_k in d_ks", d_k)
    return list(d_ks)


def _check_std(std) -> None:
    """``std`` is a positive number."""
    if isinstance(std, bool) or not isinstance(std, (int, float)):
        raise TypeError(f"std must be a positive number, got {type(std).__name__}")
    if not std > 0:
        raise ValueError(f"std must be positive, got {std}")


# --8<-- [start:random_dot_products]
def random_dot_products(
    d_k: int,
    num_samples: int,
    *,
    std: float = 1.0,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """``num_samples`` dot products ``q·k`` of random vectors of width ``d_k``.

    Every entry of ``q`` and ``k`` is drawn independently from a normal
    distribution with mean 0 and standard deviation ``std``.
    """
    check_positive_int("d_k", d_k)
    check_positive_int("num_samples", num_samples)
    _check_std(std)
    shape = (num_samples, d_k)  # (N, Dk)
    q = std * torch.randn(shape, generator=generator, device=device)
    k = std * torch.randn(shape, generator=generator, device=device)
    return (q * k).sum(dim=-1)  # (N,): one dot product per row


# --8<-- [end:random_dot_products]


# --8<-- [start:entropy_jacobian]
def softmax_entropy(weights: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Entropy ``-sum_j p_j log p_j`` (nats) of each distribution along ``dim``.

    0 for a one-hot row (all attention on one key), ``log S`` for a uniform
    row over ``S`` keys. A zero weight contributes 0 (the limit of p log p).
    """
    check_floating("weights", weights)
    # entr(p) = -p log p, with entr(0) = 0
    entropy = torch.special.entr(weights).sum(dim=dim)
    return entropy + 0.0  # a one-hot row sums to -0.0; show it as 0.0


def softmax_jacobian(weights: torch.Tensor) -> torch.Tensor:
    """The Jacobian of softmax, ``diag(p) - p p^T``, from ``p = softmax(x)``.

    ``weights`` is ``(..., S)``; the result is ``(..., S, S)``, entry
    ``[i, j] = d p_i / d x_j``.
    """
    check_floating("weights", weights)
    p = weights
    return torch.diag_embed(p) - p[..., :, None] * p[..., None, :]  # (..., S, S)


def softmax_jacobian_norm(weights: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of the softmax Jacobian of each row ``(..., S) -> (...)``.

    Expanding ``||diag(p) - p p^T||^2`` gives ``s2 - 2 s3 + s2^2`` with
    ``s2 = sum p^2`` and ``s3 = sum p^3``: no ``S x S`` matrix is built. It is
    0 for a one-hot row: a saturated softmax passes no gradient back.
    """
    check_floating("weights", weights)
    s2 = (weights**2).sum(dim=-1)
    s3 = (weights**3).sum(dim=-1)
    return (s2 - 2 * s3 + s2**2).clamp_min(0).sqrt()


# --8<-- [end:entropy_jacobian]


def variance_sweep(
    d_ks: Sequence[int],
    num_samples: int = 10_000,
    *,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> dict[str, list[float]]:
    """The variance of ``q·k`` and of ``q·k / sqrt(d_k)`` for each ``d_k``.

    Returns ``{"d_k": [...], "unscaled": [...], "scaled": [...]}``, plain
    floats, deterministic for a given ``seed`` and device.
    """
    d_ks = _check_d_ks(d_ks)
    generator = torch.Generator(device=device).manual_seed(seed)
    result: dict[str, list[float]] = {"d_k": [], "unscaled": [], "scaled": []}
    for d_k in d_ks:
        dots = random_dot_products(
            d_k, num_samples, generator=generator, device=device
        )
        result["d_k"].append(d_k)
        result["unscaled"].append(dots.var().item())
        result["scaled"].append((dots / math.sqrt(d_k)).var().item())
    return result


# --8<-- [start:saturation_sweep]
def saturation_sweep(
    d_ks: Sequence[int],
    *,
    num_keys: int = 16,
    num_queries: int = 2000,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> dict[str, list[float]]:
    """How peaked softmax gets as ``d_k`` grows, with and without the scaling.

    For each ``d_k``: ``num_queries`` random queries, each scored against its
    own ``num_keys`` random keys (entries N(0, 1)). The scores go through
    softmax unscaled and divided by ``sqrt(d_k)``; the result holds the mean
    over queries of the largest weight, the entropy and the Jacobian norm:
    keys ``"max_weight_unscaled"``, ``"max_weight_scaled"``,
    ``"entropy_unscaled"``, ..., ``"jacobian_scaled"``, and ``"d_k"``.
    """
    d_ks = _check_d_ks(d_ks)
    check_positive_int("num_keys", num_keys)
    check_positive_int("num_queries", num_queries)
    generator = torch.Generator(device=device).manual_seed(seed)

    def normal(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, device=device)

    result: dict[str, list[float]] = {"d_k": []}
    for d_k in d_ks:
        q = normal(num_queries, 1, d_k)  # (N, 1, Dk)
        k = normal(num_queries, num_keys, d_k)  # (N, S, Dk): own keys per query
        scores = (q @ k.transpose(-2, -1)).squeeze(1)  # (N, S)
        result["d_k"].append(d_k)
        scaled = scores / math.sqrt(d_k)
        for name, s in (("unscaled", scores), ("scaled", scaled)):
            p = softmax(s, dim=-1)  # (N, S)
            measures = {
                "max_weight": p.amax(dim=-1),
                "entropy": softmax_entropy(p),
                "jacobian": softmax_jacobian_norm(p),
            }
            for measure, values in measures.items():
                column = result.setdefault(f"{measure}_{name}", [])
                column.append(values.mean().item())
    return result


# --8<-- [end:saturation_sweep]
