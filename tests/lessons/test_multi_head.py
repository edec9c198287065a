"""attention_src.multi_head: split/merge heads and MultiHeadAttention, checked against
nn.MultiheadAttention through from_torch."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from attention_src import MultiHeadAttention, causal_mask, merge_heads, padding_mask, split_heads

from .helpers import (
    MHA_SHAPES,
    SCENARIOS,
    assert_ignores_future_tokens,
    mha_scenario,
    randomize,
    run_nn_mha,
)

# --------------------------------------------------------------------------- split / merge


@pytest.mark.parametrize(
    ("B", "L", "D", "H"), [(2, 5, 8, 2), (1, 3, 12, 3), (3, 1, 6, 6), (2, 4, 4, 1)]
)
def test_split_heads_slices_the_features(randn, B, L, D, H):
    x = randn(B, L, D)
    heads = split_heads(x, H)
    Dh = D // H
    assert heads.shape == (B, H, L, Dh)
    for h in range(H):
        torch.testing.assert_close(heads[:, h], x[..., h * Dh : (h + 1) * Dh], rtol=0, atol=0)
    assert torch.equal(merge_heads(heads), x)


def test_merge_heads_puts_heads_side_by_side(randn):
    heads = randn(2, 3, 4, 5)  # (B, H, L, Dh)
    merged = merge_heads(heads)
    assert merged.shape == (2, 4, 15)
    expected = torch.cat([heads[:, h] for h in range(3)], dim=-1)
    assert torch.equal(merged, expected)


# ------------------------------------------------------------------- vs nn.MultiheadAttention


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize(("B", "L", "S", "D", "H"), MHA_SHAPES)
def test_from_torch_matches_nn_multihead_attention(
    randn, device, B, L, S, D, H, batch_first, bias, scenario
):
    mha = randomize(nn.MultiheadAttention(D, H, bias=bias, batch_first=batch_first).to(device))
    mha.eval()
    ours = MultiHeadAttention.from_torch(mha)
    assert not ours.training

    x, ctx, mask, key_padding_mask, attn_mask = mha_scenario(randn, device, B, L, S, D, scenario)
    ref_out, ref_weights = run_nn_mha(
        mha, x, ctx, key_padding_mask, attn_mask, need_weights=True, average_attn_weights=False
    )
    out, weights = ours(x, context=ctx, mask=mask)
    S_eff = L if ctx is None else S
    assert out.shape == (B, L, D) and weights.shape == (B, H, L, S_eff)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(weights, ref_weights)


@pytest.mark.parametrize("bias", [True, False])
def test_from_torch_in_float64(randn, device, bias):
    mha = randomize(nn.MultiheadAttention(8, 2, bias=bias, batch_first=True)).to(device).double()
    mha.eval()
    ours = MultiHeadAttention.from_torch(mha)
    assert ours.q_proj.weight.dtype == torch.float64
    x, ctx = randn(2, 4, 8, dtype=torch.float64), randn(2, 6, 8, dtype=torch.float64)
    ref, ref_w = mha(x, ctx, ctx, need_weights=True, average_attn_weights=False)
    out, weights = ours(x, context=ctx)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(weights, ref_w)


def test_from_torch_copies_weights_and_settings(device):
    mha = randomize(nn.MultiheadAttention(12, 3, dropout=0.25, batch_first=True)).to(device)
    ours = MultiHeadAttention.from_torch(mha)
    assert ours.training  # follows mha, which is in training mode
    assert (ours.d_model, ours.num_heads, ours.d_head, ours.dropout) == (12, 3, 4, 0.25)
    assert ours.q_proj.weight.device.type == device.type
    stacked = torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight])
    assert torch.equal(stacked, mha.in_proj_weight)
    stacked_bias = torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias])
    assert torch.equal(stacked_bias, mha.in_proj_bias)
    assert torch.equal(ours.out_proj.weight, mha.out_proj.weight)
    assert torch.equal(ours.out_proj.bias, mha.out_proj.bias)
    # a copy, not shared storage
    with torch.no_grad():
        mha.in_proj_weight.zero_()
    assert ours.q_proj.weight.abs().sum() > 0


def test_from_torch_rejects_the_wrong_type():
    with pytest.raises(TypeError, match=r"m must be an nn\.MultiheadAttention, got Linear"):
        MultiHeadAttention.from_torch(nn.Linear(4, 4))


def test_from_torch_rejects_different_kdim():
    with pytest.raises(ValueError, match=r"kdim == vdim == embed_dim"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, kdim=4, vdim=4))


def test_from_torch_rejects_bias_kv():
    with pytest.raises(ValueError, match=r"add_bias_kv or add_zero_attn"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, add_bias_kv=True))


# --------------------------------------------------------------------------- gradients


def test_gradcheck_self_attention(randn, device):
    mha = MultiHeadAttention(4, 2).to(device).double()
    x = randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: mha(t)[0], (x,))


def test_gradcheck_with_causal_mask(randn, device):
    mha = MultiHeadAttention(4, 2).to(device).double()
    x = randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    mask = causal_mask(3, device=device)
    assert torch.autograd.gradcheck(lambda t: mha(t, mask=mask)[0], (x,))


def test_gradcheck_cross_attention(randn, device):
    mha = MultiHeadAttention(4, 2).to(device).double()
    x = randn(1, 2, 4, dtype=torch.float64, requires_grad=True)
    ctx = randn(1, 3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: mha(a, context=b)[0], (x, ctx))


# --------------------------------------------------------------------------- causality, padding


@pytest.mark.parametrize("t", [0, 3])
def test_causal_outputs_ignore_future_tokens(randn, device, t):
    assert_ignores_future_tokens(MultiHeadAttention(8, 2).to(device).eval(), randn, t=t)


def test_padding_does_not_change_real_tokens(randn, device):
    mha = MultiHeadAttention(8, 2).to(device).eval()
    lengths = torch.tensor([6, 2, 4], device=device)
    mask = padding_mask(lengths, 6)
    real = mask[:, 0, 0, :]  # (B, L)
    x = randn(3, 6, 8)
    x2 = x.clone()
    x2[~real] = randn(int((~real).sum()), 8) * 10
    out, weights = mha(x, mask=mask)
    out2, _ = mha(x2, mask=mask)
    torch.testing.assert_close(out2[real], out[real])
    assert (weights[~mask.expand(3, 2, 6, 6)] == 0).all()
    # negative control
    free, _ = mha(x)
    free2, _ = mha(x2)
    assert (free2[real] - free[real]).abs().max() > 1e-3


def test_cross_attention_padding_of_context(randn, device):
    mha = MultiHeadAttention(8, 4).to(device).eval()
    mask = padding_mask(torch.tensor([3, 5], device=device), 5)
    x, ctx = randn(2, 4, 8), randn(2, 5, 8)
    ctx2 = ctx.clone()
    ctx2[0, 3:] = randn(2, 8) * 10
    out, _ = mha(x, context=ctx, mask=mask)
    out2, _ = mha(x, context=ctx2, mask=mask)
    torch.testing.assert_close(out2, out)
    assert (mha(x, context=ctx2)[0] - mha(x, context=ctx)[0]).abs().max() > 1e-3


# --------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_runs_in_each_dtype(randn, device, dtype):
    ref_mha = randomize(MultiHeadAttention(8, 2)).to(device).eval()
    x = randn(2, 5, 8)
    mask = causal_mask(5, device=device)
    ref_out, ref_w = ref_mha(x, mask=mask)
    mha = copy.deepcopy(ref_mha).to(dtype)
    out, weights = mha(x.to(dtype), mask=mask)
    assert out.dtype == dtype and weights.dtype == dtype
    tol = {"atol": 2e-2, "rtol": 2e-2} if dtype == torch.bfloat16 else {}
    torch.testing.assert_close(out.float(), ref_out, **tol)
    torch.testing.assert_close(weights.float(), ref_w, **tol)


# --------------------------------------------------------------------------- dropout


def test_dropout_train_and_eval(randn, device):
    p = 0.3
    mha = MultiHeadAttention(8, 2, dropout=p).to(device)
    x = randn(2, 5, 8)

    mha.eval()
    out_a, w_eval = mha(x)
    out_b, _ = mha(x)
    assert torch.equal(out_a, out_b)
    torch.testing.assert_close(w_eval.sum(-1), torch.ones(2, 2, 5, device=device))

    mha.train()
    torch.manual_seed(3)
    out_train, w_train = mha(x)
    sums = w_train.sum(-1)
    assert not torch.allclose(sums, torch.ones_like(sums))
    kept = w_train != 0
    assert (~kept).any()
    torch.testing.assert_close(w_train[kept], w_eval[kept] / (1 - p))  # scaled by 1 / (1 - p)

    torch.manual_seed(3)
    out_again, w_again = mha(x)
    assert torch.equal(out_again, out_train) and torch.equal(w_again, w_train)
    torch.manual_seed(4)
    _, w_other = mha(x)
    assert not torch.equal(w_other, w_train)


# --------------------------------------------------------------------------- errors


def test_d_model_not_divisible_by_num_heads():
    with pytest.raises(ValueError, match=r"d_model \(10\) must be divisible by num_heads \(3\)"):
        MultiHeadAttention(10, 3)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "pattern"),
    [
        ((0, 2), {}, ValueError, r"d_model must be positive, got 0"),
        ((8, 0), {}, ValueError, r"num_heads must be positive, got 0"),
        ((8.0, 2), {}, TypeError, r"d_model must be an int, got float 8\.0"),
        ((8, 2), {"dropout": 1.0}, ValueError, r"dropout must be in \[0, 1\), got 1\.0"),
        ((8, 2), {"dropout": -0.5}, ValueError, r"dropout must be in \[0, 1\), got -0\.5"),
    ],
)
def test_bad_constructor_arguments(args, kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        MultiHeadAttention(*args, **kwargs)


def test_three_dimensional_mask_is_rejected(randn, device):
    mha = MultiHeadAttention(8, 2).to(device)
    mask = torch.ones(2, 4, 4, dtype=torch.bool, device=device)
    with pytest.raises(
        ValueError, match=r"a 3-D mask \(2, 4, 4\) is ambiguous.*\(B, L, S\) pass mask\[:, None\]"
    ):
        mha(randn(2, 4, 8), mask=mask)


@pytest.mark.parametrize("name", ["x", "context"])
def test_two_dimensional_input_suggests_unsqueeze(randn, device, name):
    mha = MultiHeadAttention(8, 2).to(device)
    x, ctx = randn(2, 4, 8), randn(2, 5, 8)
    if name == "x":
        x = x[0]
    else:
        ctx = ctx[0]
    legend = r"\(B, L, D\)" if name == "x" else r"\(B, S, D\)"
    shape = r"\(4, 8\)" if name == "x" else r"\(5, 8\)"
    with pytest.raises(
        ValueError,
        match=rf"{name} must be 3-D {legend}, got 2-D shape {shape}; .*{name}\.unsqueeze\(0\)",
    ):
        mha(x, context=ctx)


def test_wrong_feature_size(randn, device):
    mha = MultiHeadAttention(8, 2).to(device)
    with pytest.raises(
        ValueError, match=r"x has 6 features per token, expected d_model=8 \(x shape \(2, 4, 6\)\)"
    ):
        mha(randn(2, 4, 6))
    with pytest.raises(
        ValueError,
        match=r"context has 5 features per token, expected d_model=8 \(context shape \(2, 3, 5\)\)",
    ):
        mha(randn(2, 4, 8), context=randn(2, 3, 5))


def test_batch_size_mismatch_with_context(randn, device):
    mha = MultiHeadAttention(8, 2).to(device)
    with pytest.raises(
        ValueError, match=r"x and context must have the same batch size B, got 2 and 3"
    ):
        mha(randn(2, 4, 8), context=randn(3, 4, 8))


def test_non_tensor_input():
    with pytest.raises(TypeError, match=r"x must be a torch\.Tensor, got list"):
        MultiHeadAttention(2, 1)([[[0.0, 1.0]]])


def test_integer_input(device):
    mha = MultiHeadAttention(2, 1).to(device)
    with pytest.raises(
        TypeError, match=r"context must be a floating-point tensor, got dtype torch\.int64"
    ):
        mha(
            torch.zeros(1, 2, 2, device=device),
            context=torch.zeros(1, 2, 2, dtype=torch.long, device=device),
        )


def test_integer_mask(randn, device):
    mha = MultiHeadAttention(8, 2).to(device)
    mask = torch.ones(4, 4, dtype=torch.int64, device=device)
    with pytest.raises(
        TypeError, match=r"mask must be a bool tensor.*torch\.int64.*mask\.bool\(\)"
    ):
        mha(randn(2, 4, 8), mask=mask)


def test_mask_that_does_not_broadcast(randn, device):
    mha = MultiHeadAttention(8, 2).to(device)
    mask = torch.ones(3, 1, 1, 4, dtype=torch.bool, device=device)
    with pytest.raises(
        ValueError, match=r"mask of shape \(3, 1, 1, 4\) does not broadcast to .* = \(2, 2, 4, 4\)"
    ):
        mha(randn(2, 4, 8), mask=mask)


# --------------------------------------------------------------------------- the signature


def test_mask_is_the_second_argument(randn, device):
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2).to(device)
    x = randn(2, 5, 8)
    mask = causal_mask(5, device=device)
    out, weights = mha(x, mask)
    ref_out, ref_weights = mha(x, mask=mask)
    assert torch.equal(out, ref_out)
    assert torch.equal(weights, ref_weights)
    assert (weights[..., 0, 1:] == 0).all()  # the mask was applied: row 0 sees key 0 only


def test_a_sequence_passed_second_is_told_that_context_is_keyword_only(randn, device):
    mha = MultiHeadAttention(8, 2).to(device)
    x, memory = randn(2, 5, 8), randn(2, 7, 8)
    with pytest.raises(
        TypeError,
        match=r"the second argument of MultiHeadAttention\.forward is the mask, got a float "
        r"tensor of shape \(2, 7, 8\), which looks like a sequence \(B, S, D\); context is "
        r"keyword-only: for cross-attention call attn\(x, context=memory\)",
    ):
        mha(x, memory)
    out, weights = mha(x, context=memory)  # the advice works
    assert out.shape == (2, 5, 8) and weights.shape == (2, 2, 5, 7)


def test_context_cannot_be_passed_by_position(randn):
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(TypeError, match=r"positional argument"):
        mha(randn(2, 5, 8), None, randn(2, 7, 8))


def test_token_ids_are_told_to_go_through_an_embedding(device):
    mha = MultiHeadAttention(8, 2).to(device)
    ids = torch.randint(0, 10, (2, 5), device=device)
    with pytest.raises(
        TypeError,
        match=r"x must be vectors \(B, L, D\), got integer tensor of shape \(2, 5\), which "
        r"looks like token ids: embed them first, e.g\. with nn\.Embedding\(vocab_size, 8\)",
    ):
        mha(ids)
    out, _ = mha(nn.Embedding(10, 8).to(device)(ids))  # the advice works
    assert out.shape == (2, 5, 8)


def test_integer_vectors_are_told_to_convert(device):
    mha = MultiHeadAttention(2, 1).to(device)
    x = torch.zeros(1, 3, 2, dtype=torch.long, device=device)
    with pytest.raises(
        TypeError,
        match=r"x must be a floating-point tensor, got dtype torch\.int64; convert it with "
        r"x\.float\(\)",
    ):
        mha(x)
    assert mha(x.float())[0].shape == (1, 3, 2)  # the advice works


def test_no_batch_hint_when_the_width_is_wrong_too(randn, device):
    mha = MultiHeadAttention(8, 2).to(device)
    with pytest.raises(ValueError, match=r"x must be 3-D \(B, L, D\), got 2-D shape \(4, 6\)$"):
        mha(randn(4, 6))
