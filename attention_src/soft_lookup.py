"""Attention as a soft lookup.

A dictionary lookup returns the value whose key *equals* the query. Written
with tensors, that is a one-hot weight vector times the values. Attention
replaces "equals" by a similarity score, the one-hot vector by a softmax of
the scores, and so returns a weighted average of all values.

Two ways to score a query against a key:

- dot product: ``score(q, k) = q · k`` (no parameters; ``q`` and ``k`` must
  have the same width);
- additive (Bahdanau et al., 2015): ``score(q, k) = vᵀ tanh(W_q q + W_k k)``
  (learned; ``q`` and ``k`` may have different widths).
"""

from __future__ import annotations

import torch
from torch import nn

from .validate import (
    check_floating,
    check_mask,
    check_min_ndim,
    check_ndim,
    check_positive_int,
    check_same_dtype_device,
    check_tensor,
    shape_str,
)

__all__ = ["hard_lookup", "soft_lookup", "AdditiveAttention"]


def _check_lookup(query, keys, values) -> None:
    for name, t in (("query", query), ("keys", keys), ("values", values)):
        check_tensor(name, t)
    check_ndim("query", query, 1, "(Dk,)")
    check_ndim("keys", keys, 2, "(S, Dk)")
    check_ndim("values", values, 2, "(S, Dv)")
    if query.size(0) != keys.size(1):
        raise ValueError(
            f"query has {query.size(0)} features but keys "
            f"{shape_str(keys.shape)} have {keys.size(1)}: a query is compared "
            "with keys of the same width Dk"
        )
    if keys.size(0) != values.size(0):
        raise ValueError(
            f"keys {shape_str(keys.shape)} and values {shape_str(values.shape)} "
            "must have the same number of rows S (one value per key)"
        )


def _check_one_match(matches: torch.Tensor, query: torch.Tensor) -> None:
    """``hard_lookup``'s ``matches`` flag exactly one key: ``KeyError`` (what
    ``dict[query]`` raises) when no key equals the query, ``ValueError`` when
    several do."""
    found = matches.nonzero().flatten().tolist()
    if not found:
        raise KeyError(f"no key equals the query {query.tolist()}")
    if len(found) > 1:
        raise ValueError(
            f"keys must be distinct, as in a dict: rows {found} equal the query",
        )


def _masked_softmax(
    scores: torch.Tensor, mask: torch.Tensor | None
) -> torch.Tensor:
    """Softmax of ``scores`` over the keys (the last dimension). A ``mask``, if
    given, hides keys first, as in ``scaled_dot_product_attention``: a bool mask
    (True = may attend) puts ``-inf`` where it is False, a float mask is added to
    the scores. A query with no key left gets zero weights instead of NaN."""
    if mask is not None:
        check_mask(mask, scores.shape)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask
    return torch.softmax(scores, dim=-1).nan_to_num(0.0)


# --8<-- [start:hard_lookup]
def hard_lookup(
    query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """A dictionary lookup written with tensors; returns ``(output, weights)``.

    Args:
        query: ``(Dk,)``, the key to look up.
        keys: ``(S, Dk)``, one key per row; all different, as in a dict.
        values: ``(S, Dv)``, the value stored under each key.

    Returns:
        output ``(Dv,)``, the value whose key equals the query, and the
        one-hot weights ``(S,)`` that picked it (``output = weights @ values``).

    Raises:
        KeyError: no key equals the query (what ``dict[query]`` raises).
    """
    _check_lookup(query, keys, values)
    # 1) exact match: True where every feature of the key equals the query
    matches = (keys == query).all(dim=-1)  # (S,)
    _check_one_match(matches, query)  # no match: KeyError, as dict[query]
    # 2) the match as a one-hot weight vector; 3) weights times values
    weights = matches.to(values.dtype)  # (S,), a single 1
    output = weights @ values  # (Dv,)
    return output, weights


# --8<-- [end:hard_lookup]


# --8<-- [start:soft_lookup]
def soft_lookup(
    query: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    sharpness: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A lookup that never fails: a weighted average of all values.

    Args:
        query: ``(Dk,)``.
        keys: ``(S, Dk)``.
        values: ``(S, Dv)``.
        sharpness: multiplies the scores before the softmax. The larger it
            is, the more of the weight goes to the best-matching key.

    Returns:
        output ``(Dv,)`` and the weights ``(S,)``: positive, summing to 1.
    """
    _check_lookup(query, keys, values)
    check_floating("query", query)
    check_same_dtype_device(query=query, keys=keys, values=values)
    # 1) similarity of the query with every key
    scores = keys @ query * sharpness  # (S,)
    # 2) scores -> weights that sum to 1
    weights = torch.softmax(scores, dim=-1)  # (S,)
    # 3) the weighted average of the values
    output = weights @ values  # (Dv,)
    return output, weights


# --8<-- [end:soft_lookup]


# --8<-- [start:additive]
class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention: ``score(q, k) = vᵀ tanh(W_q q + W_k k)``.

    Args:
        d_query: Dq, the width of a query.
        d_key: Dk, the width of a key (may differ from ``d_query``).
        d_hidden: Da, the width of the hidden layer inside the score.

    ``forward(query, key, value, mask=None)`` takes ``query (..., L, Dq)``,
    ``key (..., S, Dk)``, ``value (..., S, Dv)`` and an optional ``mask``, read
    as ``scaled_dot_product_attention`` reads it; it returns
    ``(output (..., L, Dv), weights (..., L, S))``.
    """

    def __init__(self, d_query: int, d_key: int, d_hidden: int):
        super().__init__()
        check_positive_int("d_query", d_query)
        check_positive_int("d_key", d_key)
        check_positive_int("d_hidden", d_hidden)
        self.d_query, self.d_key, self.d_hidden = d_query, d_key, d_hidden
        self.w_q = nn.Linear(d_query, d_hidden, bias=False)  # W_q: Dq -> Da
        self.w_k = nn.Linear(d_key, d_hidden, bias=False)  # W_k: Dk -> Da
        self.v = nn.Linear(d_hidden, 1, bias=False)  # vᵀ: Da -> 1

    def score(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        """The scores ``(..., L, S)`` of every query against every key."""
        q = self.w_q(query).unsqueeze(-2)  # (..., L, 1, Da)
        k = self.w_k(key).unsqueeze(-3)  # (..., 1, S, Da)
        hidden = torch.tanh(q + k)  # (..., L, S, Da): one small layer per pair
        return self.v(hidden).squeeze(-1)  # (..., L, S)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        self._check(query, key, value)
        # 1) score every (query, key) pair with the small network
        scores = self.score(query, key)  # (..., L, S)
        # 2) weights that sum to 1 (a mask, if given, hides keys first)
        weights = _masked_softmax(scores, mask)  # (..., L, S)
        # 3) the weighted average of the values
        return weights @ value, weights  # (..., L, Dv), (..., L, S)

    # --8<-- [end:additive]

    def _check(self, query, key, value) -> None:
        for name, t in (("query", query), ("key", key), ("value", value)):
            check_floating(name, t)
        check_min_ndim("query", query, 2, "(..., L, Dq)")
        check_min_ndim("key", key, 2, "(..., S, Dk)")
        check_min_ndim("value", value, 2, "(..., S, Dv)")
        check_same_dtype_device(query=query, key=key, value=value)
        for name, t, width, attr in (
            ("query", query, self.d_query, "d_query"),
            ("key", key, self.d_key, "d_key"),
        ):
            if t.size(-1) != width:
                raise ValueError(
                    f"{name} has {t.size(-1)} features, expected {attr}={width} "
                    f"({name} shape {shape_str(t.shape)})"
                )
        if key.size(-2) != value.size(-2):
            raise ValueError(
                "key and value must have the same length S (second-to-last "
                f"dimension): key {shape_str(key.shape)} has {key.size(-2)}, value "
                f"{shape_str(value.shape)} has {value.size(-2)}"
            )
