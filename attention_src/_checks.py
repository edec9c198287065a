"""Input checks shared by the public functions and modules.

A learner's mistake should stop at the entry point with a message that names
the argument, what was expected and what was found -- not three frames deep
inside ``torch.matmul``. These helpers raise ``TypeError`` for a wrong kind of
thing and ``ValueError`` for a right kind of thing with a wrong size.
"""

from __future__ import annotations

import torch


def shape_str(shape) -> str:
    """``torch.Size([2, 3])`` -> ``'(2, 3)'``: shorter, and reads like the docs."""
    return "(" + ", ".join(str(int(s)) for s in shape) + ")"


def check_tensor(name: str, x) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")


def check_floating(name: str, x: torch.Tensor) -> None:
    check_tensor(name, x)
    if not x.is_floating_point():
        raise TypeError(
            f"{name} must be a floating-point tensor, got dtype {x.dtype}; "
            f"convert it with {name}.float()"
        )


def check_ndim(name: str, x: torch.Tensor, ndim: int, legend: str) -> None:
    """Exactly ``ndim`` dimensions, e.g. ``legend='(B, L, D)'``."""
    if x.dim() != ndim:
        hint = ""
        if x.dim() == ndim - 1:
            hint = f"; for a single example add a batch dimension: {name}.unsqueeze(0)"
        raise ValueError(
            f"{name} must be {ndim}-D {legend}, got {x.dim()}-D shape {shape_str(x.shape)}{hint}"
        )


def check_min_ndim(name: str, x: torch.Tensor, ndim: int, legend: str) -> None:
    if x.dim() < ndim:
        raise ValueError(
            f"{name} must have at least {ndim} dimensions {legend}, got shape {shape_str(x.shape)}"
        )


def check_positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")


def check_probability(name: str, p) -> None:
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"{name} must be a float in [0, 1), got {type(p).__name__}")
    if not 0.0 <= p < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {p}")


def check_same_dtype_device(**tensors: torch.Tensor) -> None:
    items = list(tensors.items())
    first_name, first = items[0]
    for name, t in items[1:]:
        if t.dtype != first.dtype:
            raise TypeError(
                f"{first_name} and {name} must have the same dtype, got {first.dtype} and {t.dtype}"
            )
        if t.device != first.device:
            raise ValueError(
                f"{first_name} and {name} must be on the same device, "
                f"got {first.device} and {t.device}"
            )


def check_mask(mask, scores_shape, legend: str = "(..., L, S)") -> None:
    """A mask must be bool (True = may attend) or float (added to the scores),
    and must broadcast to the shape of the attention scores."""
    check_tensor("mask", mask)
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise TypeError(
            f"mask must be a bool tensor (True = may attend), got dtype {mask.dtype}; "
            "convert a 0/1 mask with mask.bool() (or mask == 1)"
        )
    try:
        broadcast = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        broadcast = None
    if broadcast != torch.Size(scores_shape):
        raise ValueError(
            f"mask of shape {shape_str(mask.shape)} does not broadcast to the "
            f"attention scores {legend} = {shape_str(scores_shape)}"
        )


def check_heads(d_model, num_heads) -> None:
    """``d_model`` and ``num_heads`` are positive ints and the heads split ``d_model`` evenly."""
    check_positive_int("d_model", d_model)
    check_positive_int("num_heads", num_heads)
    if d_model % num_heads != 0:
        raise ValueError(
            f"d_model ({d_model}) must be divisible by num_heads ({num_heads}); "
            f"each head gets d_model / num_heads features"
        )
