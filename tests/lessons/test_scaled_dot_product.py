"""attention_src.scaled_dot_product_attention against F.scaled_dot_product_attention,
plus gradients, causality, padding, properties, dtypes, dropout and input errors."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attention_src import causal_mask, padding_mask, scaled_dot_product_attention

# (query shape, key shape, value shape): batch and head dims, L != S, Dk != Dv,
# and leading dimensions that broadcast against each other.
QKV_SHAPES = [
    ((4, 8), (6, 8), (6, 8)),
    ((2, 5, 8), (2, 5, 8), (2, 5, 8)),
    ((2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5)),
    ((1, 1, 1, 4), (1, 1, 7, 4), (1, 1, 7, 3)),
    ((3, 2, 7, 16), (3, 2, 3, 16), (3, 2, 3, 16)),
    ((2, 4, 5, 6), (1, 4, 9, 6), (1, 4, 9, 2)),
    ((2, 1, 5, 6), (2, 3, 5, 6), (2, 3, 5, 6)),
    ((4, 3, 2, 8), (4, 3, 2, 8), (4, 3, 2, 8)),
    ((5, 12), (5, 12), (5, 1)),
    ((2, 2, 2, 3, 4), (2, 2, 2, 6, 4), (2, 2, 2, 6, 10)),
    ((3, 1, 8), (1, 9, 8), (3, 9, 8)),
    ((1, 16, 32), (1, 16, 32), (1, 16, 32)),
]

# (B, H, L, S, Dk, Dv) for the mask tests
BHLS = [
    (2, 3, 4, 6, 8, 5),
    (1, 1, 5, 5, 4, 4),
    (3, 2, 7, 3, 16, 8),
    (2, 4, 1, 9, 6, 2),
    (4, 1, 6, 6, 8, 12),
    (1, 2, 8, 16, 32, 32),
]

MASK_KINDS = ["LS", "B11S", "B1LS", "BHLS"]


def _mask_shape(kind, B, H, L, S):
    return {"LS": (L, S), "B11S": (B, 1, 1, S), "B1LS": (B, 1, L, S), "BHLS": (B, H, L, S)}[kind]


def _reference(q, k, v, **kwargs):
    """torch's SDPA on inputs expanded to a common batch shape (we broadcast ourselves)."""
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q = q.expand(*batch, *q.shape[-2:])
    k = k.expand(*batch, *k.shape[-2:])
    v = v.expand(*batch, *v.shape[-2:])
    return F.scaled_dot_product_attention(q, k, v, **kwargs)


def _qkv(randn, B, H, L, S, Dk, Dv, **kw):
    return randn(B, H, L, Dk, **kw), randn(B, H, S, Dk, **kw), randn(B, H, S, Dv, **kw)


def _manual_weights(q, k, mask=None):
    """softmax(q k^T / sqrt(d)) with torch.softmax; a bool mask hides keys."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1)


# --------------------------------------------------------------------------- equivalence


@pytest.mark.parametrize(("q_shape", "k_shape", "v_shape"), QKV_SHAPES)
def test_matches_torch_without_mask(randn, q_shape, k_shape, v_shape):
    q, k, v = randn(*q_shape), randn(*k_shape), randn(*v_shape)
    out, weights = scaled_dot_product_attention(q, k, v)
    batch = torch.broadcast_shapes(q_shape[:-2], k_shape[:-2], v_shape[:-2])
    assert out.shape == (*batch, q_shape[-2], v_shape[-1])
    assert weights.shape == (*batch, q_shape[-2], k_shape[-2])
    torch.testing.assert_close(out, _reference(q, k, v))
    torch.testing.assert_close(weights, _manual_weights(q, k).expand_as(weights))
    torch.testing.assert_close(out, weights @ v)


@pytest.mark.parametrize(("q_shape", "k_shape", "v_shape"), QKV_SHAPES[:6])
def test_custom_scale_matches_torch(randn, q_shape, k_shape, v_shape):
    q, k, v = randn(*q_shape), randn(*k_shape), randn(*v_shape)
    out, _ = scaled_dot_product_attention(q, k, v, scale=0.37)
    torch.testing.assert_close(out, _reference(q, k, v, scale=0.37))


@pytest.mark.parametrize("kind", MASK_KINDS)
@pytest.mark.parametrize(("B", "H", "L", "S", "Dk", "Dv"), BHLS)
def test_bool_mask_matches_torch(randn, rand_mask, kind, B, H, L, S, Dk, Dv):
    q, k, v = _qkv(randn, B, H, L, S, Dk, Dv)
    mask = rand_mask(*_mask_shape(kind, B, H, L, S))
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    full = mask.expand(B, H, L, S)
    assert (weights[~full] == 0).all()


@pytest.mark.parametrize("kind", MASK_KINDS)
@pytest.mark.parametrize(("B", "H", "L", "S", "Dk", "Dv"), BHLS)
def test_weights_match_manual_softmax(randn, rand_mask, kind, B, H, L, S, Dk, Dv):
    q, k, v = _qkv(randn, B, H, L, S, Dk, Dv)
    mask = rand_mask(*_mask_shape(kind, B, H, L, S))
    mask[..., 0] = True  # no query is left without a key
    _, weights = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(weights, _manual_weights(q, k, mask))


@pytest.mark.parametrize("kind", MASK_KINDS)
@pytest.mark.parametrize(("B", "H", "L", "S", "Dk", "Dv"), BHLS)
def test_float_additive_mask_matches_torch(randn, kind, B, H, L, S, Dk, Dv):
    q, k, v = _qkv(randn, B, H, L, S, Dk, Dv)
    bias = randn(*_mask_shape(kind, B, H, L, S))
    out, weights = scaled_dot_product_attention(q, k, v, bias)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=bias))
    scores = q @ k.transpose(-2, -1) / math.sqrt(Dk) + bias
    torch.testing.assert_close(weights, torch.softmax(scores, dim=-1))


@pytest.mark.parametrize(("B", "H", "L", "S", "Dk", "Dv"), BHLS)
def test_float_minus_inf_mask_equals_bool_mask(randn, rand_mask, device, B, H, L, S, Dk, Dv):
    q, k, v = _qkv(randn, B, H, L, S, Dk, Dv)
    mask = rand_mask(B, 1, L, S)
    additive = torch.zeros(B, 1, L, S, device=device).masked_fill(~mask, float("-inf"))
    out_b, w_b = scaled_dot_product_attention(q, k, v, mask)
    out_f, w_f = scaled_dot_product_attention(q, k, v, additive)
    torch.testing.assert_close(out_f, out_b)
    torch.testing.assert_close(w_f, w_b)


@pytest.mark.parametrize(
    ("B", "H", "L", "Dk", "Dv"),
    [(1, 1, 1, 4, 4), (2, 3, 5, 8, 4), (3, 2, 9, 16, 16), (2, 1, 16, 8, 3)],
)
def test_square_causal_mask_matches_is_causal(randn, device, B, H, L, Dk, Dv):
    q, k, v = _qkv(randn, B, H, L, L, Dk, Dv)
    out, weights = scaled_dot_product_attention(q, k, v, causal_mask(L, device=device))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert (weights.triu(1) == 0).all()


@pytest.mark.parametrize(("L", "S"), [(2, 5), (4, 7), (1, 6), (3, 4)])
def test_rectangular_causal_mask_matches_torch_given_the_same_mask(randn, device, L, S):
    q, k, v = _qkv(randn, 2, 3, L, S, 8, 6)
    mask = causal_mask(L, S, device=device)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


@pytest.mark.parametrize(("L", "S"), [(2, 5), (3, 4), (1, 6)])
def test_is_causal_with_fewer_queries_is_top_left_aligned_unlike_ours(randn, device, L, S):
    """Documents a difference: torch's is_causal=True with L < S uses tril() (top-left),
    our causal_mask(L, S) uses tril(S - L) (bottom-right, as decoding with a cache needs)."""
    q, k, v = _qkv(randn, 2, 2, L, S, 8, 8)
    ones = torch.ones(L, S, dtype=torch.bool, device=device)
    ours_mask = causal_mask(L, S, device=device)
    assert torch.equal(ours_mask, ones.tril(S - L))
    assert not torch.equal(ours_mask, ones.tril())

    torch_causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    top_left, _ = scaled_dot_product_attention(q, k, v, ones.tril())
    bottom_right, _ = scaled_dot_product_attention(q, k, v, ours_mask)
    torch.testing.assert_close(torch_causal, top_left)
    assert (torch_causal - bottom_right).abs().max() > 1e-3


# --------------------------------------------------------------------------- fully masked rows


@pytest.mark.parametrize(("B", "H", "L", "S", "Dk", "Dv"), BHLS)
def test_fully_masked_rows_give_zeros_not_nan(randn, rand_mask, device, B, H, L, S, Dk, Dv):
    q, k, v = _qkv(randn, B, H, L, S, Dk, Dv)
    mask = rand_mask(B, H, L, S)
    mask[..., 0] = True
    mask[0, 0, -1] = False  # the last query of (batch 0, head 0) may attend nothing
    mask[-1, :, 0] = False  # the first query of the last batch item, in every head
    dead = ~mask.any(-1)  # (B, H, L)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert not torch.isnan(out).any() and not torch.isnan(weights).any()
    assert torch.equal(out[dead], torch.zeros_like(out[dead]))
    assert torch.equal(weights[dead], torch.zeros_like(weights[dead]))
    reference = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out, reference)
    # the other rows still sum to 1
    torch.testing.assert_close(
        weights[~dead].sum(-1), torch.ones(int((~dead).sum()), device=device)
    )


def test_fully_masked_rows_with_float_mask(randn, device):
    q, k, v = _qkv(randn, 2, 2, 3, 4, 8, 8)
    bias = torch.zeros(2, 1, 3, 4, device=device)
    bias[1, 0, 2] = float("-inf")
    out, weights = scaled_dot_product_attention(q, k, v, bias)
    assert torch.equal(out[1, :, 2], torch.zeros(2, 8, device=device))
    assert torch.equal(weights[1, :, 2], torch.zeros(2, 4, device=device))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=bias))


# --------------------------------------------------------------------------- gradients


def test_gradcheck_without_mask(randn):
    q, k, v = (
        randn(*s, dtype=torch.float64, requires_grad=True)
        for s in [(2, 3, 4), (2, 5, 4), (2, 5, 3)]
    )
    assert torch.autograd.gradcheck(lambda *t: scaled_dot_product_attention(*t)[0], (q, k, v))


def test_gradcheck_with_mask(randn, rand_mask):
    q, k, v = (
        randn(*s, dtype=torch.float64, requires_grad=True)
        for s in [(2, 3, 4), (2, 5, 4), (2, 5, 3)]
    )
    mask = rand_mask(2, 3, 5)
    mask[..., 0] = True
    assert torch.autograd.gradcheck(lambda *t: scaled_dot_product_attention(*t, mask)[0], (q, k, v))
    assert torch.autograd.gradcheck(lambda *t: scaled_dot_product_attention(*t, mask)[1], (q, k, v))


def test_gradcheck_with_fully_masked_row(randn, rand_mask, device):
    q, k, v = (
        randn(*s, dtype=torch.float64, requires_grad=True)
        for s in [(2, 3, 4), (2, 5, 4), (2, 5, 3)]
    )
    mask = rand_mask(2, 3, 5)
    mask[..., 0] = True
    mask[1, 2] = False  # query 2 of batch item 1 sees nothing
    assert torch.autograd.gradcheck(lambda *t: scaled_dot_product_attention(*t, mask)[0], (q, k, v))

    out, _ = scaled_dot_product_attention(q, k, v, mask)
    out.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    # the query that attends nothing gets no gradient
    assert torch.equal(q.grad[1, 2], torch.zeros(4, dtype=torch.float64, device=device))


# --------------------------------------------------------------------------- causality and padding


@pytest.mark.parametrize("t", [0, 2, 5])
def test_causal_outputs_ignore_future_tokens(randn, device, t):
    B, L, D = 2, 7, 8
    x = randn(B, L, D)
    x_changed = x.clone()
    x_changed[:, t + 1 :] = randn(B, L - t - 1, D) * 5
    mask = causal_mask(L, device=device)
    out, _ = scaled_dot_product_attention(x, x, x, mask)
    out_changed, _ = scaled_dot_product_attention(x_changed, x_changed, x_changed, mask)
    torch.testing.assert_close(out_changed[:, : t + 1], out[:, : t + 1])
    assert (out_changed[:, t + 1 :] - out[:, t + 1 :]).abs().max() > 1e-2

    # negative control: without the mask the earlier outputs do change
    free, _ = scaled_dot_product_attention(x, x, x)
    free_changed, _ = scaled_dot_product_attention(x_changed, x_changed, x_changed)
    assert (free_changed[:, : t + 1] - free[:, : t + 1]).abs().max() > 1e-3


def test_padded_keys_do_not_change_outputs(randn, device):
    B, H, L, S, D = 3, 2, 4, 6, 8
    lengths = torch.tensor([6, 2, 4], device=device)
    mask = padding_mask(lengths, S)  # (B, 1, 1, S)
    q, k, v = randn(B, H, L, D), randn(B, H, S, D), randn(B, H, S, D)
    pad = ~mask[:, :, 0, :].expand(B, H, S)  # True at the padded keys
    k2, v2 = k.clone(), v.clone()
    k2[pad] = randn(int(pad.sum()), D) * 10
    v2[pad] = randn(int(pad.sum()), D) * 10
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    out2, weights2 = scaled_dot_product_attention(q, k2, v2, mask)
    torch.testing.assert_close(out2, out)
    torch.testing.assert_close(weights2, weights)
    assert (weights[pad[:, :, None, :].expand(B, H, L, S)] == 0).all()

    # negative control: without the mask the padding leaks into the outputs
    free, _ = scaled_dot_product_attention(q, k, v)
    free2, _ = scaled_dot_product_attention(q, k2, v2)
    assert (free2[1] - free[1]).abs().max() > 1e-2


# --------------------------------------------------------------------------- properties


HYPOTHESIS = settings(
    deadline=None,
    max_examples=50,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # device is a plain value
)


@st.composite
def _masked_problem(draw):
    B, H = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    L, S = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    Dk, Dv = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    kind = draw(st.sampled_from(MASK_KINDS))
    shape = _mask_shape(kind, B, H, L, S)
    n = math.prod(shape)
    bits = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    seed = draw(st.integers(0, 2**31 - 1))
    return (B, H, L, S, Dk, Dv), shape, bits, seed


@HYPOTHESIS
@given(problem=_masked_problem())
def test_weight_properties(device, problem):
    (B, H, L, S, Dk, Dv), shape, bits, seed = problem
    g = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(B, H, L, Dk, generator=g, device=device) * 3
    k = torch.randn(B, H, S, Dk, generator=g, device=device) * 3
    v = torch.randn(B, H, S, Dv, generator=g, device=device)
    mask = torch.tensor(bits, dtype=torch.bool, device=device).reshape(shape)

    out, weights = scaled_dot_product_attention(q, k, v, mask)
    full = mask.expand(B, H, L, S)
    alive = full.any(-1)  # (B, H, L): the query may attend at least one key

    assert out.shape == (B, H, L, Dv) and weights.shape == (B, H, L, S)
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    assert (weights >= 0).all()
    assert (weights[~full] == 0).all()  # masked positions get exactly 0
    sums = weights.sum(-1)
    torch.testing.assert_close(sums[alive], torch.ones_like(sums[alive]))
    assert (sums[~alive] == 0).all()
    assert (out[~alive] == 0).all()


@HYPOTHESIS
@given(
    L=st.integers(1, 6),
    S=st.integers(1, 6),
    Dk=st.integers(1, 8),
    Dv=st.integers(1, 8),
    seed=st.integers(0, 2**31 - 1),
)
def test_unmasked_output_is_a_convex_combination_of_values(device, L, S, Dk, Dv, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    q, k = (
        torch.randn(L, Dk, generator=g, device=device),
        torch.randn(S, Dk, generator=g, device=device),
    )
    v = torch.randn(S, Dv, generator=g, device=device)
    out, weights = scaled_dot_product_attention(q, k, v)
    assert (weights > 0).all()
    # each output lies inside the per-feature range of the values
    tol = 1e-5
    assert (out >= v.min(0).values - tol).all() and (out <= v.max(0).values + tol).all()


# --------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_runs_in_each_dtype(randn, rand_mask, dtype):
    q32, k32, v32 = _qkv(randn, 2, 3, 4, 6, 8, 5)
    mask = rand_mask(2, 1, 4, 6)
    mask[..., 0] = True
    ref_out, ref_w = scaled_dot_product_attention(q32, k32, v32, mask)
    out, weights = scaled_dot_product_attention(q32.to(dtype), k32.to(dtype), v32.to(dtype), mask)
    assert out.dtype == dtype and weights.dtype == dtype
    if dtype == torch.bfloat16:
        torch.testing.assert_close(out.float(), ref_out, atol=2e-2, rtol=2e-2)
        torch.testing.assert_close(weights.float(), ref_w, atol=2e-2, rtol=2e-2)
    else:
        torch.testing.assert_close(out.float(), ref_out)
        torch.testing.assert_close(weights.float(), ref_w)


def test_float64_matches_torch_in_float64(randn, rand_mask):
    q, k, v = _qkv(randn, 2, 3, 5, 7, 8, 4, dtype=torch.float64)
    mask = rand_mask(5, 7)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


# --------------------------------------------------------------------------- dropout


def test_dropout_zeroes_or_rescales_each_weight(randn):
    p = 0.4
    q, k, v = _qkv(randn, 2, 2, 5, 6, 8, 4)
    _, clean = scaled_dot_product_attention(q, k, v)
    torch.manual_seed(7)
    out, dropped = scaled_dot_product_attention(q, k, v, dropout_p=p)
    kept = dropped != 0
    assert kept.any() and (~kept).any()
    torch.testing.assert_close(dropped[kept], clean[kept] / (1 - p))
    torch.testing.assert_close(out, dropped @ v)
    assert not torch.allclose(dropped.sum(-1), torch.ones_like(dropped.sum(-1)))

    torch.manual_seed(7)
    out_again, dropped_again = scaled_dot_product_attention(q, k, v, dropout_p=p)
    assert torch.equal(dropped_again, dropped) and torch.equal(out_again, out)


@pytest.mark.parametrize("p", [1.0, -0.1, 1.5])
def test_dropout_outside_unit_interval_raises(randn, p):
    q = randn(2, 3, 4)
    with pytest.raises(ValueError, match=rf"dropout_p must be in \[0, 1\), got {p}"):
        scaled_dot_product_attention(q, q, q, dropout_p=p)


def test_dropout_of_wrong_type_raises(randn):
    q = randn(2, 3, 4)
    with pytest.raises(TypeError, match=r"dropout_p must be a float in \[0, 1\), got str"):
        scaled_dot_product_attention(q, q, q, dropout_p="0.1")


# --------------------------------------------------------------------------- errors


def test_query_key_feature_size_mismatch(randn):
    with pytest.raises(
        ValueError,
        match=r"query and key must have the same feature size Dk.*"
        r"query \(2, 4, 8\) has 8, key \(2, 5, 6\) has 6",
    ):
        scaled_dot_product_attention(randn(2, 4, 8), randn(2, 5, 6), randn(2, 5, 6))


def test_key_value_length_mismatch(randn):
    with pytest.raises(
        ValueError,
        match=r"key and value must have the same length S.*key \(2, 5, 8\) has 5, "
        r"value \(2, 7, 8\) has 7",
    ):
        scaled_dot_product_attention(randn(2, 4, 8), randn(2, 5, 8), randn(2, 7, 8))


def test_batch_dims_that_do_not_broadcast(randn):
    with pytest.raises(
        ValueError,
        match=r"leading \(batch/head\) dimensions.*must broadcast: got \(2, 4, 8\), "
        r"\(3, 5, 8\), \(3, 5, 8\)",
    ):
        scaled_dot_product_attention(randn(2, 4, 8), randn(3, 5, 8), randn(3, 5, 8))


@pytest.mark.parametrize(
    ("mask_shape", "shown"),
    [((3, 5), r"\(3, 5\)"), ((2, 4, 6), r"\(2, 4, 6\)"), ((7, 2, 4, 5), r"\(7, 2, 4, 5\)")],
)
def test_mask_that_does_not_broadcast(randn, device, mask_shape, shown):
    q, k = randn(2, 4, 8), randn(2, 5, 8)
    mask = torch.ones(mask_shape, dtype=torch.bool, device=device)
    with pytest.raises(
        ValueError,
        match=rf"mask of shape {shown} does not broadcast to the attention scores "
        r"\(\.\.\., L, S\) = \(2, 4, 5\)",
    ):
        scaled_dot_product_attention(q, k, k, mask)


@pytest.mark.parametrize("dtype", [torch.int64, torch.uint8, torch.int32])
def test_integer_mask_raises_type_error(randn, device, dtype):
    q = randn(2, 4, 8)
    mask = torch.ones(4, 4, dtype=dtype, device=device)
    with pytest.raises(TypeError, match=rf"mask must be a bool tensor.*{dtype}.*mask\.bool\(\)"):
        scaled_dot_product_attention(q, q, q, mask)


def test_non_tensor_mask_raises(randn):
    q = randn(2, 4, 8)
    with pytest.raises(TypeError, match=r"mask must be a torch\.Tensor, got list"):
        scaled_dot_product_attention(q, q, q, [[True] * 4] * 4)


@pytest.mark.parametrize("which", ["query", "key", "value"])
def test_non_tensor_input_raises(randn, which):
    args = {"query": randn(4, 8), "key": randn(4, 8), "value": randn(4, 8)}
    args[which] = args[which].tolist()
    with pytest.raises(TypeError, match=rf"{which} must be a torch\.Tensor, got list"):
        scaled_dot_product_attention(**args)


def test_integer_query_raises(randn, device):
    q = torch.ones(4, 8, dtype=torch.long, device=device)
    with pytest.raises(
        TypeError,
        match=r"query must be a floating-point tensor, got dtype torch\.int64.*query\.float\(\)",
    ):
        scaled_dot_product_attention(q, randn(4, 8), randn(4, 8))


def test_dtype_mismatch_between_query_and_key(randn):
    q, k = randn(4, 8), randn(4, 8, dtype=torch.float64)
    with pytest.raises(
        TypeError,
        match=r"query and key must have the same dtype, got torch\.float32 and torch\.float64",
    ):
        scaled_dot_product_attention(q, k, k)


def test_one_dimensional_query_raises(randn):
    with pytest.raises(
        ValueError,
        match=r"query must have at least 2 dimensions \(\.\.\., L, Dk\), got shape \(8\)",
    ):
        scaled_dot_product_attention(randn(8), randn(4, 8), randn(4, 8))
