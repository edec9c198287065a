"""attention_src.alibi: the slopes against transformers' build_alibi_tensor (BLOOM)
and the paper's formula; the bias against BLOOM's (equal up to a per-row constant,
so the same attention weights) on the causal part; distance-only dependence and the
bottom-right alignment; and the input checks."""

from __future__ import annotations

import math
import os

import pytest
import torch

from attention_src.alibi import alibi_bias, alibi_slopes, soft_cap
from attention_src.masks import causal_mask
from attention_src.scaled_dot_product import scaled_dot_product_attention

os.environ.setdefault("HF_HUB_OFFLINE", "1")
bloom = pytest.importorskip("transformers.models.bloom.modeling_bloom")


def _bloom(H, S, device, dtype=torch.float64):
    """BLOOM's alibi (H, 1, S): slope_h * j for key j (no padding)."""
    return bloom.build_alibi_tensor(torch.ones(1, S, device=device), H, dtype)


@pytest.mark.parametrize("H", [*range(1, 17), 24, 32, 40])
def test_slopes_equal_bloom(device, H):
    reference = _bloom(H, 2, device, torch.float32)[:, 0, 1]  # slope_h * 1
    torch.testing.assert_close(alibi_slopes(H).to(device, torch.float32), reference)


@pytest.mark.parametrize("H", [1, 2, 4, 8, 16])
def test_slopes_of_the_paper_for_powers_of_two(H):
    """2^(-8/H), 2^(-16/H), ..., 2^(-8): for 8 heads 1/2, 1/4, ..., 1/256."""
    expected = torch.tensor([2.0 ** (-8.0 * (i + 1) / H) for i in range(H)], dtype=torch.float64)
    torch.testing.assert_close(alibi_slopes(H), expected, atol=0, rtol=1e-14)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("H", "L", "S"), [(4, 6, 6), (6, 3, 8), (12, 1, 5)])
def test_bias_matches_bloom_on_the_causal_part(device, randn, dtype, H, L, S):
    ours = alibi_bias(H, L, S, device=device, dtype=dtype)  # (H, L, S)
    assert ours.shape == (H, L, S) and ours.dtype == dtype
    theirs = _bloom(H, S, device, dtype)  # (H, 1, S): broadcasts over the queries
    causal = causal_mask(L, S, device=device)
    difference = (ours - theirs).masked_fill(~causal, float("nan"))
    row_constant = difference.nanmean(dim=-1, keepdim=True)  # (H, L, 1)
    torch.testing.assert_close(difference[:, causal], (row_constant + 0 * difference)[:, causal])
    # so the attention weights are the same
    q, k, v = (randn(2, H, n, 8, dtype=dtype) for n in (L, S, S))
    scores_mask = ours.masked_fill(~causal, float("-inf"))
    reference_mask = theirs.expand(H, L, S).masked_fill(~causal, float("-inf"))
    _, w_ours = scaled_dot_product_attention(q, k, v, scores_mask)
    _, w_ref = scaled_dot_product_attention(q, k, v, reference_mask)
    torch.testing.assert_close(w_ours, w_ref)


def test_bias_depends_only_on_the_distance(device):
    H, S = 5, 9
    bias = alibi_bias(H, S, S, device=device, dtype=torch.float64)
    slopes = alibi_slopes(H).to(device)
    for i in range(S):
        for j in range(S):
            torch.testing.assert_close(bias[:, i, j], -slopes * abs(i - j))
    assert (bias.diagonal(dim1=-2, dim2=-1) == 0).all()
    # L new queries after S - L cached keys: the last L rows of the square bias
    torch.testing.assert_close(
        alibi_bias(H, 3, S, device=device), alibi_bias(H, S, S, device=device)[:, -3:]
    )


def test_errors():
    with pytest.raises(ValueError, match="num_heads must be positive"):
        alibi_slopes(0)
    with pytest.raises(TypeError, match="num_heads must be an int"):
        alibi_slopes(2.0)
    with pytest.raises(ValueError, match=r"size_k \(2\) must be >= size_q \(3\)"):
        alibi_bias(4, 3, 2)


# ---------------------------------------------------------------- soft-capping


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("cap", [50.0, 5, 0.5])
def test_soft_cap_matches_definition(device, randn, dtype, cap):
    scores = randn(2, 3, 4, 5, dtype=dtype) * 20
    capped = soft_cap(scores, cap)
    assert capped.shape == scores.shape and capped.dtype == dtype
    for idx in [(0, 0, 0, 0), (1, 2, 3, 4), (0, 1, 2, 3), (1, 0, 3, 1)]:
        x = scores[idx].item()
        assert capped[idx].item() == pytest.approx(cap * math.tanh(x / cap), rel=1e-6, abs=1e-6)
    assert (capped.abs() <= cap).all()
    # small scores pass nearly unchanged, big ones are squashed
    small = torch.tensor([-0.01, 0.0, 0.02], device=device, dtype=dtype)
    torch.testing.assert_close(soft_cap(small, 50.0), small, atol=1e-8, rtol=1e-6)
    assert soft_cap(torch.tensor([1e4], device=device), 30.0).item() == pytest.approx(30.0)


def test_soft_cap_before_the_mask(device, randn):
    """A masked -inf capped becomes -cap, a finite score: capping after the mask would
    give the hidden keys weight. Capped first, then masked, they get none."""
    scores = randn(1, 1, 3, 3)
    hidden = ~causal_mask(3, device=device)
    masked_first = soft_cap(scores.masked_fill(hidden, float("-inf")), 2.0)
    assert (masked_first[0, 0][hidden] == -2.0).all()
    assert (masked_first.softmax(-1)[0, 0][hidden] > 0).all()  # the pitfall
    capped_first = soft_cap(scores, 2.0).masked_fill(hidden, float("-inf"))
    assert (capped_first.softmax(-1)[0, 0][hidden] == 0).all()


def test_soft_cap_errors(device, randn):
    with pytest.raises(ValueError, match="cap must be a finite number > 0, got 0"):
        soft_cap(randn(3), 0)
    with pytest.raises(ValueError, match="cap must be a finite number > 0, got inf"):
        soft_cap(randn(3), float("inf"))
    with pytest.raises(TypeError, match="cap must be a number > 0, got '50'"):
        soft_cap(randn(3), "50")
    with pytest.raises(TypeError, match="scores must be a floating-point tensor"):
        soft_cap(torch.ones(3, dtype=torch.long, device=device), 5.0)
