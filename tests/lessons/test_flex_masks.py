"""Every mask and score bias of the site as a FlexAttention ``mask_mod`` or ``score_mod``
(``torch.nn.attention.flex_attention``, eager on the CPU): the mask a ``mask_mod`` makes
is exactly the site's own function's, and flex's output equals SDPA's and ours with the
site's dense mask or bias. Causal (both alignments), padding, sliding window, prefix-LM,
a document mask for packed sequences; ALiBi and tanh soft-capping as ``score_mod``.
Last, the ``BlockMask``: the tiles it skips are exactly the tiles where the site's dense
mask is all False; the share skipped is printed for a few lengths (measured, not
asserted)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attention_src.alibi import alibi_bias, alibi_slopes, soft_cap
from attention_src.masks import causal_mask, document_mask, padding_mask, prefix_lm_mask
from attention_src.scaled_dot_product import scaled_dot_product_attention
from attention_src.windows import sliding_window_mask

flex = pytest.importorskip("torch.nn.attention.flex_attention")

# eager flex_attention warns that it materialises the scores (slow, but exact): expected
pytestmark = pytest.mark.filterwarnings(
    "ignore:flex_attention called without torch.compile:UserWarning"
)

B, H, Dh = 2, 4, 8
WINDOW, PREFIX = 4, 7


def _packed_ids(lengths: list[list[int]], device) -> torch.Tensor:
    """``(B, S)`` document ids of sequences packed from documents of these lengths."""
    rows = [torch.repeat_interleave(torch.arange(len(ls)), torch.tensor(ls)) for ls in lengths]
    return torch.stack(rows).to(device)


def _case(name: str, L: int, S: int, device):
    """``(mask_mod, the site's dense mask broadcastable to (B, H, L, S))`` for ``name``;
    the queries are the last L of S positions (bottom-right) unless named top-left."""
    off = S - L  # the absolute position of query 0
    if name == "causal top-left":  # PyTorch's is_causal: query i sees keys 0 .. i
        dense = torch.ones(L, S, dtype=torch.bool, device=device).tril()
        return (lambda b, h, q, kv: kv <= q), dense
    if name == "causal bottom-right":
        return (lambda b, h, q, kv: kv <= q + off), causal_mask(L, S, device=device)
    if name == "padding":
        lengths = torch.tensor([S, S - 6], device=device)
        return (lambda b, h, q, kv: kv < lengths[b]), padding_mask(lengths, S)
    if name == "sliding window":
        dense = sliding_window_mask(L, S, WINDOW, device=device)

        def window(b, h, q, kv):
            return (kv <= q + off) & (kv > q + off - WINDOW)

        return window, dense
    if name == "prefix-LM":
        dense = prefix_lm_mask(L, S, PREFIX, device=device)
        return (lambda b, h, q, kv: (kv < PREFIX) | (kv <= q + off)), dense
    if name == "document":  # packed sequences: self-attention, L = S
        ids = _packed_ids([[5, 9, 6], [3, 3, 3, 11]], device)  # (B, 20)

        def same_document(b, h, q, kv):
            return (ids[b, q] == ids[b, kv]) & (kv <= q)

        return same_document, document_mask(ids)
    raise ValueError(name)


MASKS = [
    ("causal top-left", 12, 20),
    ("causal bottom-right", 12, 20),
    ("padding", 12, 20),
    ("sliding window", 12, 20),
    ("prefix-LM", 12, 20),
    ("document", 20, 20),
]


@pytest.mark.parametrize(("name", "L", "S"), MASKS, ids=[m[0] for m in MASKS])
def test_mask_mod_equals_the_sites_mask(device, randn, name, L, S):
    mask_mod, dense = _case(name, L, S, device)
    made = flex.create_mask(mask_mod, B, H, L, S, device=device)  # (B, H, L, S)
    assert torch.equal(made, dense.expand(B, H, L, S))
    q, k, v = randn(B, H, L, Dh), randn(B, H, S, Dh), randn(B, H, S, Dh)
    block_mask = flex.create_block_mask(mask_mod, B, H, L, S, device=device)
    out = flex.flex_attention(q, k, v, block_mask=block_mask)
    sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=dense)
    ours, _ = scaled_dot_product_attention(q, k, v, dense)
    torch.testing.assert_close(out, sdpa)
    torch.testing.assert_close(out, ours)
    if name == "causal top-left":  # the alignment PyTorch's is_causal uses
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert (out - F.scaled_dot_product_attention(q, k, v)).abs().max() > 1e-3  # it masks


def test_alibi_as_a_score_mod(device, randn):
    """ALiBi adds -slope_h * distance to each score: a score_mod, with the causal mask
    as a mask_mod; equal to SDPA with the site's alibi_bias as a float mask."""
    L, S = 12, 20
    off = S - L
    slopes = alibi_slopes(H).to(device=device, dtype=torch.float32)  # (H,)

    def alibi(score, b, h, q, kv):
        return score - slopes[h] * (q + off - kv).abs()

    causal = flex.create_block_mask(lambda b, h, q, kv: kv <= q + off, None, None, L, S, device)
    q, k, v = randn(B, H, L, Dh), randn(B, H, S, Dh), randn(B, H, S, Dh)
    out = flex.flex_attention(q, k, v, score_mod=alibi, block_mask=causal)
    bias = alibi_bias(H, L, S, device=device)  # (H, L, S)
    bias = bias.masked_fill(~causal_mask(L, S, device=device), float("-inf"))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=bias))
    torch.testing.assert_close(out, scaled_dot_product_attention(q, k, v, bias)[0])
    plain = flex.flex_attention(q, k, v, block_mask=causal)
    assert (out - plain).abs().max() > 1e-3  # the bias matters


@pytest.mark.parametrize("cap", [1.0, 3.0])
def test_soft_capping_as_a_score_mod(device, randn, cap):
    """The site's soft_cap itself as the score_mod (flex hands it the scaled score,
    before the mask_mod hides keys), against the same steps written out: scale, cap,
    mask, softmax."""
    L = S = 16
    q, k, v = randn(B, H, L, Dh) * 3, randn(B, H, S, Dh) * 3, randn(B, H, S, Dh)
    causal = flex.create_block_mask(lambda b, h, q, kv: kv <= q, None, None, L, S, device)
    out = flex.flex_attention(
        q, k, v, score_mod=lambda s, b, h, qi, kv: soft_cap(s, cap), block_mask=causal
    )
    scores = soft_cap(q @ k.transpose(-2, -1) / Dh**0.5, cap)  # (B, H, L, S)
    scores = scores.masked_fill(~causal_mask(L, device=device), float("-inf"))
    torch.testing.assert_close(out, scores.softmax(dim=-1) @ v)
    plain = flex.flex_attention(q, k, v, block_mask=causal)
    assert (out - plain).abs().max() > 1e-2  # capping matters at these scores


def _tiles(dense: torch.Tensor, block: int) -> torch.Tensor:
    """``(n / block, n / block)`` bool: which tiles of the square mask allow any pair."""
    n = dense.size(-1) // block
    return dense.view(n, block, n, block).any(dim=3).any(dim=1)


def _same_document(ids: torch.Tensor):
    """The causal document mask_mod of one packed sequence with document ``ids`` (S,)."""
    return lambda b, h, q, kv: (ids[q] == ids[kv]) & (kv <= q)


def test_block_mask_skips_exactly_the_empty_tiles(device):
    """For causal, sliding-window and document masks, the BlockMask computes the tiles
    where the dense mask allows something and skips the rest; the share skipped grows
    with the length (printed: measured, not asserted)."""
    block, gen = 128, torch.Generator().manual_seed(0)
    for n in (1024, 4096):
        doc_lengths = torch.randint(64, 512, (n // 64,), generator=gen)
        ids = torch.repeat_interleave(torch.arange(doc_lengths.numel()), doc_lengths)[:n]
        ids = ids.to(device)
        cases = {
            "causal": (lambda b, h, q, kv: kv <= q, causal_mask(n, device=device)),
            "window 256": (
                lambda b, h, q, kv: (kv <= q) & (kv > q - 256),
                sliding_window_mask(n, n, 256, device=device),
            ),
            "document": (_same_document(ids), document_mask(ids)),
        }
        shares = []
        for name, (mask_mod, dense) in cases.items():
            bm = flex.create_block_mask(mask_mod, None, None, n, n, device, BLOCK_SIZE=block)
            computed = bm.to_dense()[0, 0].bool()  # (n / block, n / block)
            assert torch.equal(computed, _tiles(dense, block))
            shares.append(f"{name} {1 - computed.float().mean().item():.1%}")
        print(f"\nlength {n}, tiles of {block}: skipped " + ", ".join(shares))
