"""Boolean attention masks. Convention: ``True`` = this query may attend to this
key.

That is the meaning ``F.scaled_dot_product_attention`` uses, so the same mask
can be handed to our code and to PyTorch's. (``nn.MultiheadAttention`` uses the
opposite meaning for its bool masks: pass it ``~mask``.)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .validate import (
    check_last_queries,
    check_positive_int,
    check_tensor,
    shape_str,
)

__all__ = ["causal_mask", "padding_mask", "prefix_lm_mask", "document_mask"]


def _check_enough_keys(size_q: int, size_k: int) -> None:
    """``causal_mask`` needs at least as many keys as queries."""
    if size_k < size_q:
        raise ValueError(
            f"size_k ({size_k}) must be >= size_q ({size_q}): with fewer keys than "
            "queries, the first queries would have no key to attend to"
        )


# --8<-- [start:causal_mask]
def causal_mask(
    size_q: int,
    size_k: int | None = None,
    *,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Bool mask ``(L, S)`` where query ``i`` may attend key ``j`` iff
    ``j <= i + (S - L)``.

    The alignment is bottom-right: the last query sees every key. With a
    cache of ``S - L`` earlier keys, the ``L`` new queries sit at the end of
    the sequence, which is what decoding needs. When ``L == S`` this is the
    familiar lower triangle (``torch.tril``).

    Args:
        size_q: L, the number of queries.
        size_k: S, the number of keys (defaults to ``size_q``).
        device: where to create the mask.
    """
    size_k = size_q if size_k is None else size_k
    check_positive_int("size_q", size_q)
    check_positive_int("size_k", size_k)
    _check_enough_keys(size_q, size_k)
    ones = torch.ones(size_q, size_k, dtype=torch.bool, device=device)
    return torch.tril(ones, diagonal=size_k - size_q)  # (L, S)


# --8<-- [end:causal_mask]


def _check_padding_mask(
    lengths: Sequence[int] | torch.Tensor, max_len: int | None
) -> tuple[torch.Tensor, int]:
    """Check ``padding_mask``'s arguments and return them ready to use:
    ``lengths`` as a 1-D integer tensor (a list of ints becomes a
    ``torch.long`` tensor on the CPU; a tensor is returned as it is) and
    ``max_len`` (the longest length when it is None)."""
    if isinstance(lengths, torch.Tensor):
        if (
            lengths.is_floating_point()
            or lengths.is_complex()
            or lengths.dtype == torch.bool
        ):
            raise TypeError(
                f"lengths must be a 1-D integer tensor, got dtype {lengths.dtype}"
            )
        if lengths.dim() != 1:
            raise ValueError(
                "lengths must be a 1-D integer tensor (B,), got shape "
                f"{shape_str(lengths.shape)}"
            )
        lengths_t = lengths
    elif isinstance(lengths, Sequence) and all(
        isinstance(n, int) and not isinstance(n, bool) for n in lengths
    ):
        lengths_t = torch.tensor(list(lengths), dtype=torch.long)
    else:
        raise TypeError(
            "lengths must be a list of ints or a 1-D integer tensor, got "
            f"{lengths!r}"
        )
    if lengths_t.numel() == 0:
        raise ValueError("lengths must hold at least one sequence length")
    if (lengths_t < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths_t.tolist()}")
    longest = int(lengths_t.max())
    if max_len is None:
        max_len = longest
    check_positive_int("max_len", max_len)
    if longest > max_len:
        raise ValueError(f"a length ({longest}) exceeds max_len ({max_len})")
    return lengths_t, max_len


# --8<-- [start:padding_mask]
def padding_mask(
    lengths: Sequence[int] | torch.Tensor, max_len: int | None = None
) -> torch.Tensor:
    """Bool mask ``(B, 1, 1, S)``: True where key ``j`` is a real token of sequence
    ``b``.

    The two singleton dimensions broadcast over heads and queries, so the mask
    fits scores of shape ``(B, H, L, S)`` (and ``(B, L, S)`` after
    ``squeeze(1)``).

    Args:
        lengths: the real length of each sequence, a list of ints or a 1-D
            integer tensor (its device is used for the mask).
        max_len: S, the padded length (defaults to the longest length).
    """
    lengths, max_len = _check_padding_mask(lengths, max_len)
    positions = torch.arange(max_len, device=lengths.device)  # (S,)
    real = positions[None, :] < lengths[:, None]  # (B, S)
    return real[:, None, None, :]  # (B, 1, 1, S)


# --8<-- [end:padding_mask]


# --8<-- [start:prefix_lm_mask]
def prefix_lm_mask(
    size_q: int,
    size_k: int,
    prefix_len: int,
    *,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Bool mask ``(L, S)`` of a prefix language model: the first
    ``prefix_len`` keys (the prompt) are seen by every query, the rest
    causally. Query ``i``, at absolute position ``p = S - L + i``, may attend
    key ``j`` iff ``j < prefix_len`` or ``j <= p``.

    Inside the prefix that is bidirectional attention (an encoder's view of
    the prompt); after it, a decoder's. The alignment is bottom-right, as in
    ``causal_mask``, which is the case ``prefix_len = 0``.

    Args:
        size_q: L, the number of queries.
        size_k: S, the number of keys, at least L.
        prefix_len: how many keys from the start everyone sees, ``0 .. S``.
        device: where to create the mask.
    """
    _check_prefix_lm(size_q, size_k, prefix_len)
    p = torch.arange(size_k - size_q, size_k, device=device)[:, None]  # (L, 1)
    j = torch.arange(size_k, device=device)[None, :]  # (1, S)
    return (j < prefix_len) | (j <= p)  # (L, S)


# --8<-- [end:prefix_lm_mask]


def _check_prefix_lm(size_q, size_k, prefix_len) -> None:
    check_last_queries(size_q, size_k)
    if isinstance(prefix_len, bool) or not isinstance(prefix_len, int):
        raise TypeError(f"prefix_len must be an int, got {prefix_len!r}")
    if not 0 <= prefix_len <= size_k:
        raise ValueError(
            f"prefix_len must be in [0, size_k] = [0, {size_k}], got {prefix_len}"
        )


# --8<-- [start:document_mask]
def document_mask(
    document_ids: torch.Tensor, *, causal: bool = True
) -> torch.Tensor:
    """Bool mask for documents packed into one sequence: position ``i`` may
    attend position ``j`` iff both belong to the same document (and, with
    ``causal``, ``j <= i``), so no document sees another.

    Args:
        document_ids: integer tensor ``(S,)`` or ``(B, S)``: the document of
            each position, e.g. ``0 0 0 1 1 2 2 2``. Its device is used.
        causal: also hide the later positions of a document (a decoder's
            training on packed text); ``False`` for an encoder.

    Returns:
        ``(S, S)`` for ``(S,)`` ids; ``(B, 1, S, S)`` for ``(B, S)``, which
        broadcasts over heads like ``padding_mask``.
    """
    _check_document_ids(document_ids, causal)
    ids = document_ids[..., None, :]  # (..., 1, S): the key's document
    same = document_ids[..., :, None] == ids  # (..., S, S)
    if causal:
        S = document_ids.size(-1)
        same = same & causal_mask(S, device=document_ids.device)  # (..., S, S)
    return (
        same if document_ids.dim() == 1 else same[:, None]
    )  # (S, S), (B, 1, S, S)


# --8<-- [end:document_mask]


def _check_document_ids(document_ids, causal) -> None:
    check_tensor("document_ids", document_ids)
    if (
        document_ids.is_floating_point()
        or document_ids.is_complex()
        or document_ids.dtype == torch.bool
    ):
        raise TypeError(
            "document_ids must be an integer tensor, got dtype "
            f"{document_ids.dtype}"
        )
    if document_ids.dim() not in (1, 2) or document_ids.size(-1) == 0:
        raise ValueError(
            "document_ids must be (S,) or (B, S) with S >= 1, got shape "
            f"{shape_str(document_ids.shape)}"
        )
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
