"""attention_src.windows: the sliding-window mask against one built from explicit
index comparisons on enumerated small cases; attention with it equal to SDPA; the
banded computation equal to masked SDPA; the receptive field against gradients of a
stack of windowed layers; and the input checks."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

from attention_src.gqa import grouped_query_attention
from attention_src.masks import causal_mask
from attention_src.scaled_dot_product import scaled_dot_product_attention
from attention_src.windows import banded_attention, receptive_field, sliding_window_mask

CASES = [
    (L, S, w) for L, S, w in itertools.product(range(1, 6), range(1, 8), range(1, 9)) if S >= L
]


def _explicit(L, S, w):
    """Query i sits at absolute position S - L + i; it may see the w positions that end
    at itself."""
    rows = []
    for i in range(L):
        p = S - L + i
        rows.append([p - w + 1 <= j <= p for j in range(S)])
    return torch.tensor(rows, dtype=torch.bool)


def test_mask_equals_explicit_index_comparisons(device):
    for L, S, w in CASES:
        mask = sliding_window_mask(L, S, w, device=device)
        assert mask.dtype == torch.bool and mask.device.type == device.type
        assert torch.equal(mask.cpu(), _explicit(L, S, w)), (L, S, w)


def test_mask_properties(device):
    for L, S, w in CASES[::3]:
        mask = sliding_window_mask(L, S, w, device=device)
        assert (mask.sum(-1) <= w).all() and mask[:, -L:].diagonal().all()  # itself
        assert not (mask & ~causal_mask(L, S, device=device)).any()  # never the future
        if w >= S:
            assert torch.equal(mask, causal_mask(L, S, device=device))
    # the last L rows of the square mask: what L new queries over a cache see
    assert torch.equal(sliding_window_mask(3, 9, 4), sliding_window_mask(9, 9, 4)[-3:])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("L", "S", "w"), [(6, 6, 3), (1, 9, 4), (4, 10, 2), (7, 7, 1)])
def test_attention_with_the_mask_equals_sdpa(device, randn, dtype, L, S, w):
    q, k, v = (
        randn(2, 4, L, 8, dtype=dtype),
        randn(2, 4, S, 8, dtype=dtype),
        randn(2, 4, S, 8, dtype=dtype),
    )
    mask = sliding_window_mask(L, S, w, device=device)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    tol = dict(atol=1e-12, rtol=1e-12) if dtype == torch.float64 else {}
    torch.testing.assert_close(out, expected, **tol)
    assert (weights[..., ~mask] == 0).all()
    gqa_out, _ = grouped_query_attention(q, k[:, :2], v[:, :2], mask)
    expected = F.scaled_dot_product_attention(
        q, k[:, :2], v[:, :2], attn_mask=mask, enable_gqa=True
    )
    torch.testing.assert_close(gqa_out, expected, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("L", "w"), [(16, 4), (17, 4), (5, 8), (9, 1), (12, 12), (30, 7)])
def test_banded_attention_equals_masked_sdpa(device, randn, dtype, L, w):
    q, k, v = (randn(2, 3, L, 8, dtype=dtype) for _ in range(3))
    expected = F.scaled_dot_product_attention(
        q, k, v, attn_mask=sliding_window_mask(L, L, w, device=device)
    )
    tol = dict(atol=1e-12, rtol=1e-12) if dtype == torch.float64 else {}
    torch.testing.assert_close(banded_attention(q, k, v, w), expected, **tol)


@pytest.mark.parametrize(("L", "w", "layers"), [(12, 3, 1), (12, 3, 2), (12, 3, 4), (10, 2, 3)])
def test_receptive_field_equals_gradient_reach(device, randn, L, w, layers):
    """Output i of a stack of windowed attention layers (with residuals) depends on
    input j exactly where receptive_field says."""
    mask = sliding_window_mask(L, L, w, device=device)
    reach = receptive_field(mask, layers)
    x = randn(1, L, 8, dtype=torch.float64, requires_grad=True)
    h = x
    for _ in range(layers):
        h = h + scaled_dot_product_attention(h, h, h, mask)[0]
    depends = torch.zeros(L, L, dtype=torch.bool, device=device)
    for i in range(L):
        (grad,) = torch.autograd.grad(h[0, i].sum(), x, retain_graph=True)
        depends[i] = grad[0].abs().sum(-1) > 0
    assert torch.equal(reach, depends)
    i, j = torch.meshgrid(torch.arange(L), torch.arange(L), indexing="ij")
    distance = (i - j).to(device)
    assert torch.equal(reach, (distance >= 0) & (distance <= layers * (w - 1)))


def test_errors(device, randn):
    with pytest.raises(ValueError, match=r"size_k \(3\) must be >= size_q \(4\)"):
        sliding_window_mask(4, 3, 2)
    with pytest.raises(ValueError, match="window must be positive"):
        sliding_window_mask(4, 4, 0)
    with pytest.raises(TypeError, match="window must be an int"):
        sliding_window_mask(4, 4, 2.5)
    q = randn(1, 4, 8)
    with pytest.raises(ValueError, match="same shape"):
        banded_attention(q, randn(1, 5, 8), randn(1, 5, 8), 2)
    with pytest.raises(TypeError, match="floating-point"):
        banded_attention(q.long(), q, q, 2)
    with pytest.raises(ValueError, match=r"square bool \(L, L\) mask, got shape \(3, 4\)"):
        receptive_field(torch.ones(3, 4, dtype=torch.bool), 2)
    with pytest.raises(TypeError, match=r"square bool \(L, L\) mask, got dtype torch\.float32"):
        receptive_field(torch.ones(3, 3), 2)
    with pytest.raises(TypeError, match=r"mask must be a torch\.Tensor, got list"):
        receptive_field([[True]], 2)
    with pytest.raises(ValueError, match="num_layers must be positive"):
        receptive_field(torch.ones(3, 3, dtype=torch.bool), 0)
