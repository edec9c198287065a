"""Input checks shared by the public functions and modules.

A learner's mistake should stop at the entry point with a message that names
the argument, what was expected and what was found -- not three frames deep
inside ``torch.matmul``. These helpers raise ``TypeError`` for a wrong kind of
thing and ``ValueError`` for a right kind of thing with a wrong size.
"""

from __future__ import annotations

import torch

__all__ = [
    "shape_str",
    "check_tensor",
    "check_floating",
    "check_ndim",
    "check_vectors",
    "check_min_ndim",
    "check_positive_int",
    "check_last_queries",
    "check_probability",
    "check_same_dtype_device",
    "check_mask",
    "check_heads",
    "check_token_ids",
]


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


def check_ndim(
    name: str, x: torch.Tensor, ndim: int, legend: str, *, batch_hint: bool = True
) -> None:
    """Exactly ``ndim`` dimensions, e.g. ``legend='(B, L, D)'``.

    With one dimension too few, the message suggests adding a batch dimension,
    unless ``batch_hint`` is False (the caller knows that would not help).
    """
    if x.dim() != ndim:
        hint = ""
        if batch_hint and x.dim() == ndim - 1:
            hint = (
                f"; for a single example add a batch dimension: {name}.unsqueeze(0)"
            )
        raise ValueError(
            f"{name} must be {ndim}-D {legend}, got {x.dim()}-D shape "
            f"{shape_str(x.shape)}{hint}"
        )


def check_vectors(
    name: str,
    x,
    width: int,
    *,
    legend: str = "(B, L, D)",
    width_name: str = "d_model",
) -> None:
    """``x`` is a floating-point tensor of ``len(legend)`` dimensions whose last
    one is ``width``: a batch of sequences of vectors, e.g. ``(B, L, D)``.

    The shape is checked before the dtype, so that each piece of advice in a
    message is the one that fixes the call: integer ids of shape ``(B, L)``
    are told to go through an embedding first (not to become floats, then get
    a batch dimension, then fail on their width), and ``x.float()`` is only
    suggested for a tensor whose shape is already right.
    """
    check_tensor(name, x)
    ndim = legend.count(",") + 1
    is_ids = (
        not x.is_floating_point() and not x.is_complex() and x.dtype != torch.bool
    )
    if is_ids and x.dim() == ndim - 1:
        raise TypeError(
            f"{name} must be vectors {legend}, got integer tensor of shape "
            f"{shape_str(x.shape)}, which looks like token ids: embed them first, "
            f"e.g. with nn.Embedding(vocab_size, {width})"
        )
    fits = x.dim() > 0 and x.size(-1) == width
    check_ndim(name, x, ndim, legend, batch_hint=fits)
    if not fits:
        raise ValueError(
            f"{name} has {x.size(-1)} features per token, expected "
            f"{width_name}={width} ({name} shape {shape_str(x.shape)})"
        )
    check_floating(name, x)


def check_min_ndim(name: str, x: torch.Tensor, ndim: int, legend: str) -> None:
    if x.dim() < ndim:
        raise ValueError(
            f"{name} must have at least {ndim} dimensions {legend}, got shape "
            f"{shape_str(x.shape)}"
        )


def check_positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{name} must be an int, got {type(value).__name__} {value!r}"
        )
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")


def check_last_queries(size_q, size_k) -> None:
    """``size_q`` queries that are the last of ``size_k`` positions (bottom-right
    alignment): both positive ints, and at least as many keys as queries."""
    check_positive_int("size_q", size_q)
    check_positive_int("size_k", size_k)
    if size_k < size_q:
        raise ValueError(
            f"size_k ({size_k}) must be >= size_q ({size_q}): the queries are "
            "the last size_q of the size_k positions"
        )


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
                f"{first_name} and {name} must have the same dtype, got "
                f"{first.dtype} and {t.dtype}"
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
            "mask must be a bool tensor (True = may attend), got dtype "
            f"{mask.dtype}; convert a 0/1 mask with mask.bool() (or mask == 1)"
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
    """``d_model`` and ``num_heads`` are positive ints and the heads split
    ``d_model`` evenly."""
    check_positive_int("d_model", d_model)
    check_positive_int("num_heads", num_heads)
    if d_model % num_heads != 0:
        raise ValueError(
            f"d_model ({d_model}) must be divisible by num_heads ({num_heads}); "
            f"each head gets d_model / num_heads features"
        )


def check_token_ids(
    name: str,
    tokens,
    vocab_size: int,
    *,
    max_len: int | None = None,
    hint: str = "",
) -> None:
    """``tokens`` must be a non-empty ``(B, L)`` tensor of integer ids in
    ``[0, vocab_size)``, with ``L <= max_len`` when ``max_len`` is given.

    The one token-id check of the package: every model that embeds ids calls
    it. The dtype must be ``torch.long`` or ``torch.int`` (what
    ``nn.Embedding`` accepts). ``hint`` is appended to the dtype error (what
    the caller expects instead).
    """
    check_tensor(name, tokens)
    if tokens.dtype not in (torch.int64, torch.int32):  # what nn.Embedding takes
        raise TypeError(
            f"{name} must be integer token ids (torch.long), got dtype "
            f"{tokens.dtype}{hint}"
        )
    check_ndim(name, tokens, 2, "(B, L)")
    if tokens.size(1) == 0:
        shape = shape_str(tokens.shape)
        raise ValueError(f"{name} must hold at least one token, got shape {shape}")
    if max_len is not None and tokens.size(1) > max_len:
        raise ValueError(
            f"{name} has length {tokens.size(1)}, but the position table covers "
            f"only max_len={max_len} positions ({name} shape "
            f"{shape_str(tokens.shape)})"
        )
    if tokens.numel() and (tokens.min() < 0 or tokens.max() >= vocab_size):
        raise ValueError(
            f"{name}: token ids must be in [0, {vocab_size}), got values from "
            f"{int(tokens.min())} to {int(tokens.max())} ({name} shape "
            f"{shape_str(tokens.shape)})"
        )
