"""attention_src.soft_lookup: the hard lookup, the soft lookup and additive attention."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from attention_src import (
    AdditiveAttention,
    hard_lookup,
    scaled_dot_product_attention,
    soft_lookup,
)


@pytest.fixture
def table(device):
    keys = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], device=device)
    values = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], device=device)
    return keys, values


# --- hard_lookup ---------------------------------------------------------------------------


@pytest.mark.parametrize("index", [0, 1, 2])
def test_hard_lookup_returns_the_row_of_the_equal_key(table, index):
    keys, values = table
    output, weights = hard_lookup(keys[index], keys, values)
    expected = torch.zeros(3, device=keys.device)
    expected[index] = 1.0
    assert torch.equal(weights, expected)
    assert torch.equal(output, values[index])
    assert torch.equal(output, weights @ values)


def test_hard_lookup_raises_key_error_like_a_dict(table):
    keys, values = table
    with pytest.raises(KeyError, match="no key equals the query"):
        hard_lookup(keys[0] + 0.5, keys, values)


def test_hard_lookup_rejects_duplicate_keys(table):
    keys, values = table
    keys = torch.cat([keys, keys[:1]])
    values = torch.cat([values, values[:1]])
    with pytest.raises(ValueError, match=r"rows \[0, 3\] equal the query"):
        hard_lookup(keys[0], keys, values)


def test_hard_lookup_works_with_integer_keys(device):
    keys = torch.tensor([[3, 1], [2, 7]], device=device)
    values = torch.tensor([[0.5], [2.5]], device=device)
    output, _ = hard_lookup(torch.tensor([2, 7], device=device), keys, values)
    assert output.item() == 2.5


@pytest.mark.parametrize(
    ("query_shape", "keys_shape", "values_shape", "error", "match"),
    [
        ((2, 3), (3, 3), (3, 2), ValueError, r"query must be 1-D \(Dk,\)"),
        ((3,), (3,), (3, 2), ValueError, r"keys must be 2-D \(S, Dk\)"),
        ((3,), (3, 3), (3,), ValueError, r"values must be 2-D \(S, Dv\)"),
        ((4,), (3, 3), (3, 2), ValueError, "query has 4 features but keys"),
        ((3,), (3, 3), (2, 2), ValueError, r"same number of rows S"),
    ],
)
@pytest.mark.parametrize("lookup", [hard_lookup, soft_lookup])
def test_lookup_shape_errors(randn, lookup, query_shape, keys_shape, values_shape, error, match):
    with pytest.raises(error, match=match):
        lookup(randn(*query_shape), randn(*keys_shape), randn(*values_shape))


def test_lookup_rejects_non_tensors(table):
    keys, values = table
    with pytest.raises(TypeError, match=r"query must be a torch\.Tensor, got list"):
        soft_lookup([1.0, 0.0, 1.0], keys, values)


# --- soft_lookup ---------------------------------------------------------------------------


@pytest.mark.parametrize(("S", "Dk", "Dv"), [(1, 1, 1), (3, 3, 2), (7, 5, 4), (16, 8, 8)])
@pytest.mark.parametrize("sharpness", [0.1, 1.0, 3.0])
def test_soft_lookup_matches_sdpa_with_one_query(randn, S, Dk, Dv, sharpness):
    query, keys, values = randn(Dk), randn(S, Dk), randn(S, Dv)
    output, weights = soft_lookup(query, keys, values, sharpness=sharpness)
    ref_out, ref_w = scaled_dot_product_attention(query[None], keys, values, scale=sharpness)
    torch.testing.assert_close(weights, ref_w[0])
    torch.testing.assert_close(output, ref_out[0])
    torch.testing.assert_close(weights, torch.softmax(keys @ query * sharpness, dim=-1))
    torch.testing.assert_close(weights.sum(), torch.tensor(1.0, device=query.device))
    assert (weights > 0).all()


def test_soft_lookup_tends_to_the_hard_lookup(table):
    keys, values = table
    hard_output, hard_weights = hard_lookup(keys[1], keys, values)
    gaps = []
    for sharpness in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0):
        output, weights = soft_lookup(keys[1], keys, values, sharpness=sharpness)
        gaps.append((output - hard_output).abs().max().item())
    assert all(a > b for a, b in itertools.pairwise(gaps))
    torch.testing.assert_close(weights, hard_weights, atol=1e-6, rtol=0)


def test_soft_lookup_cannot_break_a_tie(table):
    keys, values = table
    midpoint = (keys[0] + keys[1]) / 2
    _, weights = soft_lookup(midpoint, keys, values, sharpness=50.0)
    torch.testing.assert_close(weights[0], weights[1])
    torch.testing.assert_close(weights[0], torch.tensor(0.5, device=keys.device))


def test_soft_lookup_gradients_reach_every_input(randn):
    query = randn(4, requires_grad=True)
    keys = randn(5, 4, requires_grad=True)
    values = randn(5, 3, requires_grad=True)
    output, _ = soft_lookup(query, keys, values)
    output.sum().backward()
    for t in (query, keys, values):
        assert t.grad is not None and t.grad.abs().sum() > 0


def test_soft_lookup_rejects_integer_and_mixed_dtypes(device):
    keys = torch.ones(3, 2, device=device)
    values = torch.ones(3, 2, device=device)
    with pytest.raises(TypeError, match="query must be a floating-point tensor"):
        soft_lookup(torch.ones(2, dtype=torch.long, device=device), keys, values)
    with pytest.raises(TypeError, match="must have the same dtype"):
        soft_lookup(torch.ones(2, dtype=torch.float64, device=device), keys, values)


# --- AdditiveAttention ---------------------------------------------------------------------


def _additive_by_loops(module, query, key):
    """score(q, k) = vᵀ tanh(W_q q + W_k k) for one (L, Dq) x (S, Dk) pair of tensors."""
    W_q, W_k, v = module.w_q.weight, module.w_k.weight, module.v.weight[0]
    scores = torch.empty(query.size(0), key.size(0), device=query.device)
    for i in range(query.size(0)):
        for j in range(key.size(0)):
            scores[i, j] = v @ torch.tanh(W_q @ query[i] + W_k @ key[j])
    return scores


@pytest.mark.parametrize(
    ("L", "S", "Dq", "Dk", "Dh", "Dv"),
    [(1, 1, 1, 1, 1, 1), (3, 5, 6, 4, 8, 2), (4, 4, 8, 8, 16, 8), (6, 2, 3, 7, 5, 4)],
)
def test_additive_matches_the_formula_pair_by_pair(device, randn, L, S, Dq, Dk, Dh, Dv):
    module = AdditiveAttention(Dq, Dk, Dh).to(device)
    query, key, value = randn(L, Dq), randn(S, Dk), randn(S, Dv)
    output, weights = module(query, key, value)
    assert output.shape == (L, Dv) and weights.shape == (L, S)
    expected = _additive_by_loops(module, query, key)
    torch.testing.assert_close(module.score(query, key), expected)
    torch.testing.assert_close(weights, torch.softmax(expected, dim=-1))
    torch.testing.assert_close(output, torch.softmax(expected, dim=-1) @ value)


def test_additive_batches_are_independent(device, randn):
    module = AdditiveAttention(6, 4, 8).to(device)
    query, key, value = randn(2, 3, 3, 6), randn(2, 3, 5, 4), randn(2, 3, 5, 2)  # (B, H, ., .)
    output, weights = module(query, key, value)
    assert output.shape == (2, 3, 3, 2) and weights.shape == (2, 3, 3, 5)
    for b in range(2):
        for h in range(3):
            out_bh, w_bh = module(query[b, h], key[b, h], value[b, h])
            torch.testing.assert_close(output[b, h], out_bh)
            torch.testing.assert_close(weights[b, h], w_bh)


def test_additive_mask_hides_keys(device, randn, rand_mask):
    module = AdditiveAttention(4, 4, 8).to(device)
    query, key, value = randn(2, 5, 4), randn(2, 6, 4), randn(2, 6, 3)
    mask = rand_mask(2, 5, 6)
    mask[..., 0] = True
    output, weights = module(query, key, value, mask=mask)
    assert (weights[~mask] == 0).all()
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(2, 5, device=device))
    scores = module.score(query, key).masked_fill(~mask, float("-inf"))
    torch.testing.assert_close(weights, torch.softmax(scores, dim=-1))
    torch.testing.assert_close(output, weights @ value)


def test_additive_float_mask_is_added_to_the_scores(device, randn, rand_mask):
    module = AdditiveAttention(4, 4, 8).to(device)
    query, key, value = randn(2, 5, 4), randn(2, 6, 4), randn(2, 6, 3)
    mask = rand_mask(2, 5, 6)
    mask[..., 0] = True
    as_float = torch.zeros(2, 5, 6, device=device).masked_fill(~mask, float("-inf"))
    by_bool = module(query, key, value, mask=mask)
    by_float = module(query, key, value, mask=as_float)
    torch.testing.assert_close(by_float, by_bool)
    bias = randn(5, 6)
    _, weights = module(query, key, value, mask=bias)
    expected = torch.softmax(module.score(query, key) + bias, dim=-1)
    torch.testing.assert_close(weights, expected)


def test_additive_fully_masked_query_gets_zeros(device, randn):
    module = AdditiveAttention(4, 4, 8).to(device)
    mask = torch.ones(3, 5, dtype=torch.bool, device=device)
    mask[1] = False
    output, weights = module(randn(3, 4), randn(5, 4), randn(5, 2), mask=mask)
    assert (weights[1] == 0).all() and (output[1] == 0).all()
    assert torch.isfinite(output).all()


def test_additive_scores_are_bounded_and_saturate(device, randn):
    module = AdditiveAttention(8, 8, 16).to(device)
    query, key, value = randn(8), randn(5, 8), randn(5, 4)
    bound = module.v.weight.abs().sum()
    for c in (0.1, 1.0, 10.0, 1e3, 1e5):
        assert module.score(c * query[None], key).abs().max() <= bound
    # a huge query saturates tanh: the score no longer depends on the key
    _, weights = module(1e6 * query[None], key, value)
    torch.testing.assert_close(weights, torch.full_like(weights, 1 / 5))


def test_additive_parameter_count_and_gradients(device, randn):
    module = AdditiveAttention(6, 4, 8).to(device)
    assert sum(p.numel() for p in module.parameters()) == 8 * (6 + 4 + 1)
    output, _ = module(randn(3, 6), randn(5, 4), randn(5, 2))
    output.sum().backward()
    for p in module.parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0


@pytest.mark.parametrize(
    ("shapes", "error", "match"),
    [
        (((3, 5), (5, 4), (5, 2)), ValueError, r"query has 5 features, expected d_query=6"),
        (((3, 6), (5, 3), (5, 2)), ValueError, r"key has 3 features, expected d_key=4"),
        (((3, 6), (5, 4), (4, 2)), ValueError, "key and value must have the same length S"),
        (((6,), (5, 4), (5, 2)), ValueError, r"query must have at least 2 dimensions"),
    ],
)
def test_additive_shape_errors(device, randn, shapes, error, match):
    module = AdditiveAttention(6, 4, 8).to(device)
    with pytest.raises(error, match=match):
        module(*(randn(*s) for s in shapes))


def test_additive_type_and_argument_errors(device, randn):
    module = AdditiveAttention(6, 4, 8).to(device)
    with pytest.raises(TypeError, match="query must be a floating-point tensor"):
        module(torch.ones(3, 6, dtype=torch.long, device=device), randn(5, 4), randn(5, 2))
    with pytest.raises(TypeError, match="mask must be a bool tensor"):
        module(randn(3, 6), randn(5, 4), randn(5, 2), mask=torch.ones(3, 5, device=device).int())
    with pytest.raises(ValueError, match="does not broadcast"):
        module(randn(3, 6), randn(5, 4), randn(5, 2), mask=torch.ones(4, 5, device=device).bool())
    with pytest.raises(ValueError, match="d_hidden must be positive, got 0"):
        AdditiveAttention(6, 4, 0)
    with pytest.raises(TypeError, match="d_query must be an int"):
        AdditiveAttention(6.0, 4, 8)


def test_dot_product_needs_equal_widths_additive_does_not(device, randn):
    query, key, value = randn(3, 6), randn(5, 4), randn(5, 2)
    with pytest.raises(ValueError, match="same feature size Dk"):
        scaled_dot_product_attention(query, key, value)
    output, _ = AdditiveAttention(6, 4, 8).to(device)(query, key, value)
    assert output.shape == (3, 2)


def test_soft_lookup_loop_equals_one_matmul(randn):
    q, k, v = randn(12, 8), randn(9, 8), randn(9, 5)
    looped = torch.stack([soft_lookup(q[i], k, v, 1 / math.sqrt(8))[0] for i in range(12)])
    batched, _ = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(looped, batched)
