"""RMSNorm (Zhang and Sennrich, 2019): LayerNorm without the mean.

Each token is divided by the root mean square of its features and scaled by a
learned weight per feature; nothing is subtracted and nothing is added. It is
cheaper than LayerNorm and works as well, which is why Llama-style models use
it. ``torch.nn.RMSNorm`` computes the same thing.
"""

from __future__ import annotations

import torch
from torch import nn

from .validate import check_floating, check_positive_int, check_tensor, shape_str

__all__ = ["RMSNorm"]


# --8<-- [start:rmsnorm]
class RMSNorm(nn.Module):
    """``x / sqrt(mean(x ** 2) + eps) * weight`` over the last dimension.

    Args:
        dim: D, the size of the last dimension; ``weight`` has D entries,
            starting at 1.
        eps: added under the square root, so that a zero vector stays finite.

    ``forward(x)``: ``x`` is ``(..., D)``; the result has its shape and dtype.
    """

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        check_positive_int("dim", dim)
        if isinstance(eps, bool) or not isinstance(eps, (int, float)):
            raise TypeError(
                f"eps must be a number >= 0, got {type(eps).__name__} {eps!r}"
            )
        if eps < 0:
            raise ValueError(f"eps must be a number >= 0, got {eps!r}")
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))  # (D,)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor("x", x)
        if x.dim() == 0 or x.size(-1) != self.dim:
            raise ValueError(
                f"x must end in dim={self.dim} features (..., D), got shape "
                f"{shape_str(x.shape)}"
            )
        check_floating("x", x)  # after the shape: x.float() is then the fix
        mean_square = x.pow(2).mean(dim=-1, keepdim=True)  # (..., 1)
        return x * torch.rsqrt(mean_square + self.eps) * self.weight  # (..., D)

    # --8<-- [end:rmsnorm]

    def extra_repr(self) -> str:
        return f"{self.dim}, eps={self.eps}"
