"""Softmax, written from scratch and made numerically stable.

softmax(x)_j = exp(x_j) / sum_k exp(x_k)

Subtracting the row maximum first changes nothing mathematically (the factor
exp(-max) cancels) but keeps every exponent <= 0, so nothing overflows.
"""

from __future__ import annotations

import torch

from .validate import check_floating

__all__ = ["softmax"]


# --8<-- [start:softmax]
def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Numerically stable softmax along ``dim``.

    A slice whose entries are all ``-inf`` (a query that may attend to
    nothing) gives zeros instead of NaN. float16 and bfloat16 inputs are
    computed in float32 and the result is cast back.

    Args:
        x: scores of any shape, floating point.
        dim: the dimension that sums to 1.

    Returns:
        A tensor shaped like ``x``; each slice along ``dim`` sums to 1, or
        to 0 where every entry was ``-inf``.
    """
    check_floating("x", x)
    compute = (
        torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    )
    z = x.to(compute)
    # 1) shift by the maximum so every exponent is <= 0 (no overflow)
    row_max = z.amax(dim=dim, keepdim=True).detach()
    row_max = torch.where(
        torch.isfinite(row_max), row_max, torch.zeros_like(row_max)
    )
    e = torch.exp(z - row_max)  # exp(-inf) = 0 for masked entries
    # 2) normalise; a row of all -inf has total 0 -> divide by 1 and stay 0
    total = e.sum(dim=dim, keepdim=True)
    total = torch.where(total > 0, total, torch.ones_like(total))
    return (e / total).to(x.dtype)


# --8<-- [end:softmax]
