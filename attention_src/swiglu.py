"""The SwiGLU feed-forward layer (Shazeer, 2020), as in Llama-style models.

Two projections of the token side by side: one goes through SiLU and acts as a
gate, multiplying the other feature by feature; a third projection brings the
result back to the model width. Three weight matrices instead of the two of
the classic feed-forward layer, so the hidden width is usually made smaller
(about 8/3 D instead of 4 D) to keep the parameter count.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .validate import check_floating, check_positive_int, check_tensor, shape_str

__all__ = ["SwiGLU"]


# --8<-- [start:swiglu]
class SwiGLU(nn.Module):
    """``down_proj(silu(gate_proj(x)) * up_proj(x))``; ``x`` is ``(..., D)``.

    Args:
        d_model: D, the width of the input and the output.
        d_hidden: the width of the gate and of the gated features.
        bias: whether the three projections have a bias (Llama: none).
    """

    def __init__(self, d_model: int, d_hidden: int, bias: bool = False):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_hidden", d_hidden)
        self.d_model, self.d_hidden = d_model, d_hidden
        self.gate_proj = nn.Linear(d_model, d_hidden, bias=bias)
        self.up_proj = nn.Linear(d_model, d_hidden, bias=bias)
        self.down_proj = nn.Linear(d_hidden, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor("x", x)
        if x.dim() == 0 or x.size(-1) != self.d_model:
            raise ValueError(
                f"x must end in d_model={self.d_model} features (..., D), got "
                f"shape {shape_str(x.shape)}"
            )
        check_floating("x", x)  # after the shape: x.float() is then the fix
        gate = F.silu(
            self.gate_proj(x)
        )  # (..., d_hidden): silu(a) = a * sigmoid(a)
        return self.down_proj(gate * self.up_proj(x))  # (..., D)

    # --8<-- [end:swiglu]
