"""attention_src.SelfAttention: one head, Q/K/V as three linear views of the same x."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attention_src import SelfAttention, causal_mask, padding_mask

from .helpers import assert_ignores_future_tokens


@pytest.mark.parametrize(
    ("B", "L", "D", "d_k", "d_v"),
    [(2, 5, 8, None, None), (1, 1, 4, 4, 4), (3, 7, 8, 4, 6), (2, 9, 6, 16, 3), (4, 3, 12, 5, 12)],
)
def test_matches_torch_sdpa_on_the_projections(randn, device, B, L, D, d_k, d_v):
    attn = SelfAttention(D, d_k, d_v).to(device)
    x = randn(B, L, D)
    out, weights = attn(x)
    dk = D if d_k is None else d_k
    dv = D if d_v is None else d_v
    assert out.shape == (B, L, dv) and weights.shape == (B, L, L)

    q = x @ attn.q_proj.weight.T
    k = x @ attn.k_proj.weight.T
    v = x @ attn.v_proj.weight.T
    assert q.shape[-1] == dk
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))
    torch.testing.assert_close(weights, torch.softmax(q @ k.transpose(1, 2) / dk**0.5, dim=-1))


def test_projections_have_no_bias():
    attn = SelfAttention(8, 4, 6)
    for proj in (attn.q_proj, attn.k_proj, attn.v_proj):
        assert proj.bias is None
    assert attn.q_proj.weight.shape == (4, 8)
    assert attn.v_proj.weight.shape == (6, 8)


def test_causal_mask_matches_is_causal(randn, device):
    attn = SelfAttention(8, 4, 6).to(device)
    x = randn(2, 6, 8)
    out, weights = attn(x, causal_mask(6, device=device))
    q, k, v = attn.q_proj(x), attn.k_proj(x), attn.v_proj(x)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert (weights.triu(1) == 0).all()


def test_causal_outputs_ignore_future_tokens(randn, device):
    assert_ignores_future_tokens(SelfAttention(8).to(device), randn)


def test_padding_does_not_change_real_tokens(randn, device):
    attn = SelfAttention(8).to(device)
    lengths = torch.tensor([5, 2, 3], device=device)
    mask = padding_mask(lengths, 5).squeeze(1)  # (B, 1, S) broadcasts to (B, L, S)
    x = randn(3, 5, 8)
    real = mask[:, 0, :]  # (B, L): True at the real tokens
    x2 = x.clone()
    x2[~real] = randn(int((~real).sum()), 8) * 10
    out, weights = attn(x, mask)
    out2, _ = attn(x2, mask)
    torch.testing.assert_close(out2[real], out[real])
    assert (weights[~real[:, None, :].expand(3, 5, 5)] == 0).all()
    # negative control
    assert (attn(x2)[0][real] - attn(x)[0][real]).abs().max() > 1e-3


def test_dropout_only_in_training(randn, device):
    attn = SelfAttention(8, dropout=0.5).to(device)
    x = randn(2, 4, 8)
    attn.eval()
    out1, w1 = attn(x)
    out2, _ = attn(x)
    assert torch.equal(out1, out2)
    torch.testing.assert_close(w1.sum(-1), torch.ones(2, 4, device=device))
    attn.train()
    _, w_train = attn(x)
    assert (w_train == 0).any()
    kept = w_train != 0
    torch.testing.assert_close(w_train[kept], w1[kept] / 0.5)


def test_gradcheck(randn, device):
    attn = SelfAttention(4, 3, 2).to(device).double()
    x = randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: attn(t)[0], (x,))


# --------------------------------------------------------------------------- errors


def test_two_dimensional_input_suggests_unsqueeze(randn, device):
    attn = SelfAttention(8).to(device)
    with pytest.raises(
        ValueError,
        match=r"x must be 3-D \(B, L, D\), got 2-D shape \(5, 8\); for a single example add a "
        r"batch dimension: x\.unsqueeze\(0\)",
    ):
        attn(randn(5, 8))


def test_wrong_feature_size(randn, device):
    attn = SelfAttention(8).to(device)
    with pytest.raises(
        ValueError, match=r"x has 6 features per token, expected d_model=8 \(x shape \(2, 5, 6\)\)"
    ):
        attn(randn(2, 5, 6))


def test_non_tensor_input():
    with pytest.raises(TypeError, match=r"x must be a torch\.Tensor, got list"):
        SelfAttention(2)([[[1.0, 2.0]]])


def test_integer_input(device):
    attn = SelfAttention(2).to(device)
    with pytest.raises(
        TypeError, match=r"x must be a floating-point tensor, got dtype torch\.int64"
    ):
        attn(torch.ones(1, 3, 2, dtype=torch.long, device=device))


def test_token_ids_are_told_to_go_through_an_embedding(device):
    attn = SelfAttention(8).to(device)
    ids = torch.randint(0, 10, (2, 5), device=device)
    with pytest.raises(
        TypeError,
        match=r"x must be vectors \(B, L, D\), got integer tensor of shape \(2, 5\), which "
        r"looks like token ids: embed them first, e\.g\. with nn\.Embedding\(vocab_size, 8\)",
    ):
        attn(ids)
    embedding = torch.nn.Embedding(10, 8).to(device)
    assert attn(embedding(ids))[0].shape == (2, 5, 8)  # the advice works


def test_integer_mask(randn, device):
    attn = SelfAttention(8).to(device)
    mask = torch.ones(4, 4, dtype=torch.long, device=device)
    with pytest.raises(TypeError, match=r"mask must be a bool tensor.*mask\.bool\(\)"):
        attn(randn(2, 4, 8), mask)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"d_model": 0}, ValueError, r"d_model must be positive, got 0"),
        ({"d_model": 8, "d_k": -2}, ValueError, r"d_k must be positive, got -2"),
        ({"d_model": 8, "d_v": 2.5}, TypeError, r"d_v must be an int, got float 2\.5"),
        ({"d_model": 8, "dropout": 1.0}, ValueError, r"dropout must be in \[0, 1\), got 1\.0"),
        ({"d_model": 8, "dropout": -0.2}, ValueError, r"dropout must be in \[0, 1\), got -0\.2"),
    ],
)
def test_bad_constructor_arguments(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        SelfAttention(**kwargs)
