"""CHAPTER_TITLE: what this module teaches, in one sentence.

(The template of a lesson module: copy it to ``attention_src/LESSON_MODULE.py``,
replace the placeholders in capitals, then write the chapter's code in place of
the example function. See "Adding a chapter" in docs/contributing.md.)

A lesson imports torch, numpy, matplotlib, ``attention_src.validate`` and other
lessons only. Shape legend (docs/notation.md): B batch, H heads, L query length,
S key length, D model width, Dh head width, Dk key width.
"""

from __future__ import annotations

import math

import torch

from .validate import check_floating, check_min_ndim, shape_str

__all__ = ["dot_product_scores"]


# --8<-- [start:dot_product_scores]
def dot_product_scores(query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """Scaled dot-product scores of every query against every key.

    Args:
        query: ``(..., L, Dk)``, floating point.
        key: ``(..., S, Dk)``, same key width ``Dk``.

    Returns:
        ``(..., L, S)``: ``query @ key.T / sqrt(Dk)``; row ``i`` scores query
        ``i`` against every key.

    Raises:
        TypeError: ``query`` or ``key`` is not a floating-point tensor.
        ValueError: either has fewer than 2 dimensions, or their widths differ.
    """
    check_floating("query", query)
    check_floating("key", key)
    check_min_ndim("query", query, 2, "(..., L, Dk)")
    check_min_ndim("key", key, 2, "(..., S, Dk)")
    if query.size(-1) != key.size(-1):
        raise ValueError(
            f"query and key must have the same width Dk, got query "
            f"{shape_str(query.shape)} and key {shape_str(key.shape)}"
        )
    d_k = query.size(-1)
    return query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (..., L, S)


# --8<-- [end:dot_product_scores]
