"""Scaled dot-product attention: Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V.

Shapes: query ``(..., L, Dk)``, key ``(..., S, Dk)``, value ``(..., S, Dv)``.
The leading ``...`` dimensions (batch, heads) broadcast against each other.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .softmax import softmax
from .validate import (
    check_floating,
    check_mask,
    check_min_ndim,
    check_probability,
    check_same_dtype_device,
    shape_str,
)

__all__ = ["scaled_dot_product_attention"]


def _check_qkv(query, key, value) -> torch.Size:
    """Check the three inputs; return the shape of the scores ``(..., L, S)``."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_floating(name, t)
    check_min_ndim("query", query, 2, "(..., L, Dk)")
    check_min_ndim("key", key, 2, "(..., S, Dk)")
    check_min_ndim("value", value, 2, "(..., S, Dv)")
    check_same_dtype_device(query=query, key=key, value=value)
    if query.size(-1) != key.size(-1):
        raise ValueError(
            "query and key must have the same feature size Dk (last dimension): "
            f"query {shape_str(query.shape)} has {query.size(-1)}, "
            f"key {shape_str(key.shape)} has {key.size(-1)}"
        )
    if key.size(-2) != value.size(-2):
        raise ValueError(
            "key and value must have the same length S (second-to-last dimension): "
            f"key {shape_str(key.shape)} has {key.size(-2)}, "
            f"value {shape_str(value.shape)} has {value.size(-2)}"
        )
    try:
        batch = torch.broadcast_shapes(
            query.shape[:-2], key.shape[:-2], value.shape[:-2]
        )
    except RuntimeError:
        raise ValueError(
            "the leading (batch/head) dimensions of query, key and value must "
            f"broadcast: got {shape_str(query.shape)}, {shape_str(key.shape)}, "
            f"{shape_str(value.shape)}"
        ) from None
    return torch.Size((*batch, query.size(-2), key.size(-2)))


def _check_inputs(query, key, value, mask, dropout_p) -> None:
    """The checks of ``scaled_dot_product_attention``: the three inputs, the
    mask (dtype, shape against the scores', device) and ``dropout_p``."""
    scores_shape = _check_qkv(query, key, value)
    if mask is not None:
        check_mask(mask, scores_shape)
        if mask.device != query.device:
            raise ValueError(
                f"mask must be on the same device as query, got {mask.device} and "
                f"{query.device}"
            )
    check_probability("dropout_p", dropout_p)


# --8<-- [start:sdpa]
def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    *,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention of each query over all keys; returns ``(output, weights)``.

    Args:
        query: ``(..., L, Dk)``.
        key: ``(..., S, Dk)``.
        value: ``(..., S, Dv)``.
        mask: bool, broadcastable to ``(..., L, S)``; ``True`` = may attend.
            A float mask is added to the scores instead (as in PyTorch).
        dropout_p: probability of zeroing a weight (pass 0.0 at inference).
        scale: multiplies the scores; defaults to ``1 / sqrt(Dk)``.

    Returns:
        output ``(..., L, Dv)`` and the weights ``(..., L, S)`` that mixed
        the values. A query with no allowed key gets zero weights and a zero
        output, as ``F.scaled_dot_product_attention`` gives.
    """
    _check_inputs(query, key, value, mask, dropout_p)
    d_k = query.size(-1)
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale

    # 1) similarity of every query with every key
    scores = query @ key.transpose(-2, -1) * scale  # (..., L, S)
    # 2) hide what the mask forbids: exp(-inf) = 0, so those keys get weight 0
    if mask is not None:
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask
    # 3) turn each row of scores into weights that sum to 1
    weights = softmax(scores, dim=-1)  # (..., L, S)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    # 4) each output is the weighted average of the values
    output = weights @ value  # (..., L, Dv)
    return output, weights


# --8<-- [end:sdpa]
