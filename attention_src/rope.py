"""Rotary position embedding (RoPE; Su et al., 2021).

Instead of adding a position vector to the tokens, RoPE rotates every query
and key by an angle proportional to its position, pair of features by pair of
features, just before the dot product. The score of a query at position ``p``
and a key at position ``j`` then depends on their contents and on ``j - p``
only: the absolute positions cancel.

The default layout is "rotate half", as in GPT-NeoX and transformers' Llama:
feature ``i`` of the first half of the head pairs with feature ``i`` of the
second half, and the pair turns by the angle ``position * base ** (-2 i / Dh)``.
This is exactly transformers' ``apply_rotary_pos_emb`` with
``LlamaRotaryEmbedding``. The RoFormer paper and Meta's reference Llama code
pair neighbouring features instead, feature ``2 i`` with feature ``2 i + 1``
(transformers' conversion of Meta's checkpoints reorders the rows of the query
and key projections to match rotate half), and so do DeepSeek's models.
``rope_angles``, ``rope_rotate``, ``apply_rope`` and
``RotaryEmbedding`` take ``interleaved=True`` for that layout; the
angles are the same, only which feature pairs with which changes, so a model
must use one layout for its angles and its rotations alike.

In a model the angles are computed once per forward, by the model's
``RotaryEmbedding``, and handed to every attention layer, which rotates
its queries and keys with ``rope_rotate``; ``apply_rope`` does both
steps at once, for one tensor.
"""

from __future__ import annotations

import torch
from torch import nn

from .validate import (
    check_floating,
    check_ndim,
    check_positive_int,
    check_same_dtype_device,
    check_tensor,
    shape_str,
)

__all__ = [
    "rope_angles",
    "rotate_half",
    "rotate_pairs",
    "rope_rotate",
    "apply_rope",
    "RotaryEmbedding",
]


def _check_positions(positions, length: int | None = None) -> None:
    if not isinstance(positions, torch.Tensor):
        raise TypeError(
            "positions must be a 1-D integer tensor (L,), got "
            f"{type(positions).__name__}"
        )
    if positions.is_floating_point() or positions.dtype == torch.bool:
        raise TypeError(
            f"positions must hold integer positions, got dtype {positions.dtype}"
        )
    if positions.dim() != 1:
        raise ValueError(
            f"positions must be 1-D (L,), got shape {shape_str(positions.shape)}"
        )
    if length is not None and positions.numel() != length:
        raise ValueError(
            f"positions has {positions.numel()} entries, but x has L = {length} "
            "positions (dimension 2 of (B, H, L, Dh))"
        )


def _check_offset(offset, positions) -> None:
    """``apply_rope``'s ``offset``: an int >= 0, not given with ``positions``."""
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise TypeError(f"offset must be an int >= 0, got {offset!r}")
    if offset < 0:
        raise ValueError(f"offset must be an int >= 0, got {offset!r}")
    if offset and positions is not None:
        raise ValueError("pass either positions or offset, not both")


def _check_head_dim(head_dim) -> None:
    check_positive_int("head_dim", head_dim)
    if head_dim % 2:
        raise ValueError(
            f"head_dim must be even for RoPE, got {head_dim}: the features turn "
            "in pairs, feature i with feature i + head_dim / 2"
        )


def _check_interleaved(interleaved) -> None:
    if not isinstance(interleaved, bool):
        raise TypeError(
            "interleaved must be True (pairs 2i, 2i + 1) or False (pairs i, "
            f"i + Dh/2), got {interleaved!r}"
        )


def _check_base(base) -> None:
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        raise TypeError(f"base must be a number > 1, got {base!r}")
    if base <= 1:
        raise ValueError(f"base must be a number > 1, got {base!r}")


# --8<-- [start:rope_angles]
def rope_angles(
    positions: torch.Tensor,
    head_dim: int,
    base: float = 10000.0,
    *,
    dtype: torch.dtype | None = None,
    interleaved: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos, sin)``, each ``(L, head_dim)``: the cosine and sine of the angle
    by which each feature pair turns at each position.

    Pair ``i`` (features ``i`` and ``i + head_dim / 2``) turns with the
    frequency ``base ** (-2 i / head_dim)``; the frequencies are repeated
    twice along the last dimension, once for each feature of a pair.
    ``interleaved=True``: pair ``i`` is features ``2 i`` and ``2 i + 1``,
    and each frequency is repeated in place (``f0 f0 f1 f1 ...``).

    Args:
        positions: ``(L,)`` integer positions (need not start at 0).
        head_dim: Dh, even.
        base: sets the slowest frequency; 10000 in the original paper.
        dtype: of the result; float32 by default. The angles themselves are
            computed in float64.
        interleaved: the layout of the pairs (DeepSeek's: True).
    """
    _check_positions(positions)
    _check_head_dim(head_dim)
    _check_base(base)
    _check_interleaved(interleaved)
    # float64: bfloat16 holds no odd integer past 256 (float16 none past 2048),
    # and angle errors grow with the position; only cos and sin are rounded
    f64 = dict(device=positions.device, dtype=torch.float64)
    two_i = torch.arange(0, head_dim, 2, **f64)  # (Dh/2,)
    inv_freq = base ** (-two_i / head_dim)  # (Dh/2,): 1 ... base^(-(Dh-2)/Dh)
    angle = positions.to(torch.float64)[:, None] * inv_freq  # (L, Dh/2)
    if interleaved:  # (L, Dh): f0 f0 f1 f1 ..., a pair's two features side by side
        angle = angle.repeat_interleave(2, dim=-1)
    else:
        angle = torch.cat([angle, angle], dim=-1)  # (L, Dh): each pair twice
    dtype = torch.float32 if dtype is None else dtype
    return angle.cos().to(dtype), angle.sin().to(dtype)


# --8<-- [end:rope_angles]


# --8<-- [start:apply_rope]
def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """``(x1, x2) -> (-x2, x1)`` on the two halves of the last dimension: each
    pair ``(a, b)`` turned by 90 degrees."""
    x1, x2 = x.chunk(2, dim=-1)  # (..., Dh/2) each
    return torch.cat([-x2, x1], dim=-1)  # (..., Dh)


def rope_rotate(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    *,
    interleaved: bool = False,
) -> torch.Tensor:
    """Rotate ``x`` ``(B, H, L, Dh)`` by angles already computed: ``cos`` and
    ``sin``, each ``(L, Dh)``, as ``rope_angles`` gives them.

    Each pair ``(a, b)`` becomes ``(a cos - b sin, b cos + a sin)``. A model
    computes ``(cos, sin)`` once per forward (``RotaryEmbedding``) and
    every attention layer rotates its queries and keys with them.
    ``interleaved=True`` pairs neighbours (``rotate_pairs``); the angles
    must then come in that layout too.
    """
    check_floating("x", x)
    check_ndim("x", x, 4, "(B, H, L, Dh)")
    _check_angles(x, cos, sin)
    _check_interleaved(interleaved)
    turn = rotate_pairs if interleaved else rotate_half  # the 90-degree partner
    return x * cos + turn(x) * sin  # (B, H, L, Dh)


def apply_rope(
    x: torch.Tensor,
    positions: torch.Tensor | None = None,
    *,
    base: float = 10000.0,
    offset: int = 0,
    interleaved: bool = False,
) -> torch.Tensor:
    """Rotate queries or keys ``x`` ``(B, H, L, Dh)`` by their positions.

    Each pair ``(a, b)`` at position ``p`` becomes
    ``(a cos - b sin, b cos + a sin)`` of its angle: a rotation, so lengths
    are kept. ``positions`` ``(L,)`` defaults to ``offset, ..., offset + L - 1``;
    during cached decoding ``offset`` is the number of cached tokens.
    ``interleaved=True`` pairs neighbouring features (DeepSeek's layout).
    """
    check_floating("x", x)
    check_ndim("x", x, 4, "(B, H, L, Dh)")
    _check_offset(offset, positions)
    L = x.size(2)
    if positions is None:
        positions = torch.arange(offset, offset + L, device=x.device)  # (L,)
    _check_positions(positions, L)
    positions = positions.to(x.device)
    cos, sin = rope_angles(
        positions, x.size(-1), base, dtype=x.dtype, interleaved=interleaved
    )
    return rope_rotate(x, cos, sin, interleaved=interleaved)  # (B, H, L, Dh)


# --8<-- [end:apply_rope]


# --8<-- [start:rotate_pairs]
def rotate_pairs(x: torch.Tensor) -> torch.Tensor:
    """The interleaved layout's ``rotate_half``: ``(a, b) -> (-b, a)`` on
    each pair of neighbouring features, ``2 i`` and ``2 i + 1``."""
    a, b = x[..., 0::2], x[..., 1::2]  # (..., Dh/2) each
    return torch.stack([-b, a], dim=-1).flatten(-2)  # (..., Dh): -b0 a0 -b1 a1 ...


# --8<-- [end:rotate_pairs]


def _check_angles(x: torch.Tensor, cos, sin) -> None:
    L, Dh = x.shape[2:]
    for name, t in (("cos", cos), ("sin", sin)):
        check_tensor(name, t)
        if t.shape != (L, Dh):
            raise ValueError(
                f"{name} must be (L, Dh) = ({L}, {Dh}) for x of shape "
                f"{shape_str(x.shape)} (B, H, L, Dh), got {shape_str(t.shape)}: "
                "the angles of exactly the L positions of x"
            )
        check_same_dtype_device(x=x, **{name: t})


# --8<-- [start:rotary_embedding]
class RotaryEmbedding(nn.Module):
    """The rotation angles of a model, computed once per forward:
    ``forward(positions, *, dtype=None)`` -> ``(cos, sin)``, each
    ``(L, head_dim)``, exactly ``rope_angles``.

    A model that uses RoPE owns one and calls it once per forward, for the
    positions of its tokens (after the cached ones when decoding with a
    cache); it hands the pair to every attention layer (``rope=(cos, sin)``),
    which rotates its queries and keys with ``rope_rotate``. That is how
    transformers' Llama does it (``LlamaRotaryEmbedding``, its
    ``position_embeddings``). It has no parameters: it only remembers
    ``head_dim`` and ``base``.

    Args:
        head_dim: Dh, even: the width of each attention head.
        base: the frequency base (10000 in the paper, 100000 in SmolLM2).
        interleaved: the layout of the pairs: neighbours (DeepSeek) or halves.
    """

    def __init__(
        self, head_dim: int, base: float = 10000.0, *, interleaved: bool = False
    ):
        super().__init__()
        _check_head_dim(head_dim)
        _check_base(base)
        _check_interleaved(interleaved)
        self.head_dim, self.base, self.interleaved = head_dim, base, interleaved

    def forward(
        self, positions: torch.Tensor, *, dtype: torch.dtype | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return rope_angles(
            positions,
            self.head_dim,
            self.base,
            dtype=dtype,
            interleaved=self.interleaved,
        )

    # --8<-- [end:rotary_embedding]

    def extra_repr(self) -> str:
        layout = ", interleaved=True" if self.interleaved else ""
        return f"head_dim={self.head_dim}, base={self.base}{layout}"
