"""attention_src.positional: the sinusoidal table and the module that adds it, and the
chapter's additions: the shift matrix and learned position embeddings. (The one-layer tagger
and its previous-token task: tests/lessons/test_tagger.py.)"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from attention_src import (
    LearnedPositionalEmbedding,
    MultiHeadAttention,
    PositionalEncoding,
    sinusoidal_positional_encoding,
    sinusoidal_shift_matrix,
)


def _formula(p: int, j: int, D: int) -> float:
    """PE[p, 2i] = sin(p / 10000^(2i/D)), PE[p, 2i+1] = cos(p / 10000^(2i/D))."""
    two_i = j - (j % 2)
    angle = p / 10000 ** (two_i / D)
    return math.sin(angle) if j % 2 == 0 else math.cos(angle)


@pytest.mark.parametrize(("max_len", "d_model"), [(10, 8), (7, 5), (1, 1), (50, 3), (64, 16)])
def test_shape_for_even_and_odd_d_model(device, max_len, d_model):
    pe = sinusoidal_positional_encoding(max_len, d_model, device=device)
    assert pe.shape == (max_len, d_model)
    assert pe.dtype == torch.float32
    assert pe.device.type == device.type


@pytest.mark.parametrize("d_model", [8, 7, 5, 16])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_values_follow_the_formula(device, d_model, dtype):
    max_len = 60
    pe = sinusoidal_positional_encoding(max_len, d_model, device=device, dtype=dtype)
    assert pe.dtype == dtype
    positions = [0, 1, 2, 7, 33, 59]
    expected = torch.tensor(
        [[_formula(p, j, d_model) for j in range(d_model)] for p in positions],
        dtype=dtype,
        device=device,
    )
    torch.testing.assert_close(pe[positions], expected)


def test_position_zero_is_sin0_cos0(device):
    pe = sinusoidal_positional_encoding(3, 7, device=device, dtype=torch.float64)
    expected = torch.tensor([0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0], dtype=torch.float64, device=device)
    torch.testing.assert_close(pe[0], expected, rtol=0, atol=0)


def test_odd_d_model_ends_with_a_sine_column(device):
    D = 5
    pe = sinusoidal_positional_encoding(20, D, device=device, dtype=torch.float64)
    angle = torch.arange(20, dtype=torch.float64, device=device) / 10000 ** (4 / D)
    torch.testing.assert_close(pe[:, 4], torch.sin(angle))


def test_rows_are_distinct(device):
    pe = sinusoidal_positional_encoding(40, 8, device=device)
    distances = torch.cdist(pe, pe)
    off_diagonal = distances[~torch.eye(40, dtype=torch.bool, device=device)]
    assert off_diagonal.min() > 1e-3


@pytest.mark.parametrize(
    ("args", "error", "pattern"),
    [
        ((0, 8), ValueError, r"max_len must be positive, got 0"),
        ((5, 0), ValueError, r"d_model must be positive, got 0"),
        ((5, 8.0), TypeError, r"d_model must be an int, got float 8\.0"),
    ],
)
def test_table_bad_arguments(args, error, pattern):
    with pytest.raises(error, match=pattern):
        sinusoidal_positional_encoding(*args)


# --------------------------------------------------------------------------- module


@pytest.mark.parametrize(("B", "L", "D"), [(2, 5, 8), (1, 10, 7), (3, 1, 4)])
def test_module_adds_the_table(randn, device, B, L, D):
    module = PositionalEncoding(D, max_len=10).to(device)
    x = randn(B, L, D)
    out = module(x)
    assert out.shape == x.shape and out.dtype == x.dtype
    table = sinusoidal_positional_encoding(L, D, device=device)
    torch.testing.assert_close(out - x, table.expand(B, L, D))


def test_module_keeps_float64(randn, device):
    module = PositionalEncoding(6, max_len=8).to(device)
    x = randn(2, 4, 6, dtype=torch.float64)
    out = module(x)
    assert out.dtype == torch.float64
    expected = torch.tensor(
        [[_formula(p, j, 6) for j in range(6)] for p in range(4)],
        dtype=torch.float64,
        device=device,
    )
    torch.testing.assert_close(out - x, expected.expand(2, 4, 6), atol=1e-6, rtol=1e-6)


def test_table_is_a_non_persistent_buffer(device):
    module = PositionalEncoding(4, max_len=6).to(device)
    assert module.pe.device.type == device.type
    assert "pe" not in module.state_dict()
    assert "pe" in dict(module.named_buffers())


def _assert_dropout_only_in_training(module, randn):
    """``module`` (dropout 0.5, d_model 8): the same output every call in eval mode; in
    training some entries dropped, the others scaled by 1 / (1 - 0.5)."""
    x = randn(2, 5, 8)
    module.eval()
    clean = module(x)
    torch.testing.assert_close(clean, module(x))
    module.train()
    noisy = module(x)
    kept = noisy != 0
    assert (~kept).any()
    torch.testing.assert_close(noisy[kept], clean[kept] / 0.5)


def test_dropout_only_in_training(randn, device):
    module = PositionalEncoding(8, max_len=10, dropout=0.5).to(device)
    _assert_dropout_only_in_training(module, randn)


def test_sequence_longer_than_max_len(randn, device):
    module = PositionalEncoding(8, max_len=10).to(device)
    with pytest.raises(
        ValueError,
        match=r"sequence length 12 exceeds max_len=10.*max_len >= 12",
    ):
        module(randn(1, 12, 8))


def test_two_dimensional_input_suggests_unsqueeze(randn, device):
    module = PositionalEncoding(8, max_len=10).to(device)
    with pytest.raises(
        ValueError,
        match=r"x must be 3-D \(B, L, D\), got 2-D shape \(5, 8\); .*x\.unsqueeze\(0\)",
    ):
        module(randn(5, 8))


def test_wrong_feature_size(randn, device):
    module = PositionalEncoding(8, max_len=10).to(device)
    with pytest.raises(
        ValueError, match=r"x has 6 features, expected d_model=8 \(x shape \(2, 3, 6\)\)"
    ):
        module(randn(2, 3, 6))


def test_integer_input(device):
    module = PositionalEncoding(4, max_len=10).to(device)
    with pytest.raises(
        TypeError, match=r"x must be a floating-point tensor, got dtype torch\.int64"
    ):
        module(torch.zeros(1, 3, 4, dtype=torch.long, device=device))


def test_non_tensor_input():
    with pytest.raises(TypeError, match=r"x must be a torch\.Tensor, got list"):
        PositionalEncoding(2, max_len=4)([[[0.0, 0.0]]])


@pytest.mark.parametrize("dropout", [1.0, -0.1])
def test_bad_dropout(dropout):
    with pytest.raises(ValueError, match=rf"dropout must be in \[0, 1\), got {dropout}"):
        PositionalEncoding(4, max_len=4, dropout=dropout)


# --------------------------------------------------------------------------- shift matrix


@pytest.mark.parametrize("d_model", [2, 8, 64])
@pytest.mark.parametrize("k", [0, 1, 5, 37, -3])
def test_shift_matrix_moves_the_table_by_k(device, d_model, k):
    pe = sinusoidal_positional_encoding(200, d_model, device=device, dtype=torch.float64)
    m = sinusoidal_shift_matrix(k, d_model, device=device, dtype=torch.float64)
    p = torch.arange(max(0, -k), 200 - max(0, k), device=device)
    torch.testing.assert_close(pe[p + k], pe[p] @ m.T)


def test_shift_matrix_is_a_rotation(device):
    m = sinusoidal_shift_matrix(7, 16, device=device, dtype=torch.float64)
    eye = torch.eye(16, device=device, dtype=torch.float64)
    torch.testing.assert_close(m @ m.T, eye)
    assert torch.linalg.det(m).item() == pytest.approx(1.0)
    torch.testing.assert_close(
        m.T, sinusoidal_shift_matrix(-7, 16, device=device, dtype=torch.float64)
    )


def test_shift_matrices_compose(device):
    def shift(k):
        return sinusoidal_shift_matrix(k, 12, device=device, dtype=torch.float64)

    torch.testing.assert_close(shift(3) @ shift(4), shift(7))
    torch.testing.assert_close(shift(0), torch.eye(12, device=device, dtype=torch.float64))


def test_shift_matrix_is_block_diagonal():
    m = sinusoidal_shift_matrix(2, 8, dtype=torch.float64)
    outside = torch.ones(8, 8, dtype=torch.bool)
    for i in range(0, 8, 2):
        outside[i : i + 2, i : i + 2] = False
    assert (m[outside] == 0).all()
    angle = torch.tensor(2.0, dtype=torch.float64)  # k * w_0 with w_0 = 1
    expected = torch.stack(
        [torch.stack([angle.cos(), angle.sin()]), torch.stack([-angle.sin(), angle.cos()])]
    )
    torch.testing.assert_close(m[:2, :2], expected)


def test_shift_matrix_dtype_and_device(device):
    m = sinusoidal_shift_matrix(1, 4, device=device)
    assert m.dtype == torch.float32 and m.device.type == device.type and m.shape == (4, 4)


@pytest.mark.parametrize(
    ("args", "error", "pattern"),
    [
        ((1, 5), ValueError, r"d_model must be even for a shift matrix, got 5"),
        ((1, 0), ValueError, r"d_model must be positive, got 0"),
        ((1.0, 4), TypeError, r"k must be an int, got float 1\.0"),
        ((True, 4), TypeError, r"k must be an int, got bool True"),
    ],
)
def test_shift_matrix_bad_arguments(args, error, pattern):
    with pytest.raises(error, match=pattern):
        sinusoidal_shift_matrix(*args)


# --------------------------------------------------------------------------- learned


def test_learned_adds_one_embedding_row_per_position(randn, device):
    module = LearnedPositionalEmbedding(8, max_len=10).to(device)
    x = randn(3, 6, 8)
    out = module(x)
    assert out.shape == x.shape and out.dtype == x.dtype
    torch.testing.assert_close(out - x, module.embedding.weight[:6].expand(3, 6, 8))


def test_learned_matches_nn_embedding(randn, device):
    module = LearnedPositionalEmbedding(4, max_len=5).to(device)
    reference = nn.Embedding(5, 4).to(device)
    reference.load_state_dict(module.embedding.state_dict())
    x = randn(2, 5, 4)
    torch.testing.assert_close(module(x), x + reference(torch.arange(5, device=device)))


def test_learned_parameter_count_and_gradient(randn, device):
    module = LearnedPositionalEmbedding(6, max_len=7).to(device)
    assert sum(p.numel() for p in module.parameters()) == 7 * 6
    module(randn(2, 3, 6)).sum().backward()
    grad = module.embedding.weight.grad
    torch.testing.assert_close(grad[:3], torch.full((3, 6), 2.0, device=device))
    assert (grad[3:] == 0).all()  # rows of positions the batch did not reach


def test_learned_keeps_float64(randn, device):
    module = LearnedPositionalEmbedding(4, max_len=4).to(device)
    out = module(randn(1, 4, 4, dtype=torch.float64))
    assert out.dtype == torch.float64


def test_learned_dropout_only_in_training(randn, device):
    module = LearnedPositionalEmbedding(8, max_len=10, dropout=0.5).to(device)
    _assert_dropout_only_in_training(module, randn)


def test_learned_sequence_longer_than_max_len(randn, device):
    module = LearnedPositionalEmbedding(8, max_len=16).to(device)
    with pytest.raises(
        ValueError,
        match=r"sequence length 17 exceeds max_len=16 .*positions 16\.\.16 have no vector",
    ):
        module(randn(1, 17, 8))


def test_same_length_message_start_as_sinusoidal(randn, device):
    """Both position modules refuse a too-long input with the same opening words."""
    x = randn(1, 12, 8)
    for module in (PositionalEncoding(8, max_len=10), LearnedPositionalEmbedding(8, max_len=10)):
        with pytest.raises(ValueError, match=r"^sequence length 12 exceeds max_len=10"):
            module.to(device)(x)


@pytest.mark.parametrize(
    ("x", "error", "pattern"),
    [
        (torch.zeros(5, 8), ValueError, r"x must be 3-D \(B, L, D\), got 2-D shape \(5, 8\)"),
        (torch.zeros(1, 5, 6), ValueError, r"x has 6 features, expected d_model=8"),
        (torch.zeros(1, 5, 8, dtype=torch.long), TypeError, r"x must be a floating-point"),
        ([[0.0]], TypeError, r"x must be a torch\.Tensor, got list"),
    ],
)
def test_learned_bad_inputs(x, error, pattern):
    with pytest.raises(error, match=pattern):
        LearnedPositionalEmbedding(8, max_len=10)(x)


@pytest.mark.parametrize(
    ("args", "error", "pattern"),
    [
        ((0, 4), ValueError, r"d_model must be positive, got 0"),
        ((4, 0), ValueError, r"max_len must be positive, got 0"),
        ((4, 4.0), TypeError, r"max_len must be an int, got float"),
        ((4, 4, 1.0), ValueError, r"dropout must be in \[0, 1\), got 1\.0"),
    ],
)
def test_learned_bad_settings(args, error, pattern):
    with pytest.raises(error, match=pattern):
        LearnedPositionalEmbedding(*args)


def test_equivariance_of_multi_head_attention(randn, device):
    """The fact the chapter opens with, for the layer inside the tagger."""
    attn = MultiHeadAttention(8, 2).to(device)
    x = randn(2, 5, 8)
    perm = torch.tensor([4, 2, 0, 1, 3], device=device)
    torch.testing.assert_close(attn(x[:, perm])[0], attn(x)[0][:, perm])
    assert math.isfinite(attn(x)[0].sum().item())
