"""attention_src.softmax: agrees with torch.softmax, stays finite, handles all -inf rows."""

from __future__ import annotations

import pytest
import torch

from attention_src import softmax

SHAPES_AND_DIMS = [
    ((7,), 0),
    ((7,), -1),
    ((3, 5), -1),
    ((3, 5), 0),
    ((2, 3, 4), 1),
    ((2, 3, 4), -1),
    ((2, 1, 3, 6), 2),
    ((2, 1, 3, 6), -1),
    ((4, 2, 3, 2, 5), 3),
    ((1, 64), -1),
]


@pytest.mark.parametrize(("shape", "dim"), SHAPES_AND_DIMS)
def test_matches_torch_softmax(randn, shape, dim):
    x = randn(*shape) * 3
    out = softmax(x, dim=dim)
    torch.testing.assert_close(out, torch.softmax(x, dim=dim))
    assert out.shape == x.shape


def test_default_dim_is_last(randn):
    x = randn(3, 4, 5)
    torch.testing.assert_close(softmax(x), torch.softmax(x, dim=-1))


def test_large_logits_do_not_overflow(device):
    x = torch.tensor(
        [[1e4, 0.0, -1e4], [1e4, 1e4 - 1.0, 5.0], [-1e4, -1e4, -1e4 + 2.0]], device=device
    )
    # negative control: the naive formula overflows on these inputs
    naive = torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)
    assert not torch.isfinite(naive).all()

    out = softmax(x)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, torch.softmax(x, dim=-1))


def test_all_minus_inf_row_gives_zeros_not_nan(randn, device):
    x = randn(4, 6)
    x[1] = float("-inf")
    x[3, :4] = float("-inf")  # a partly masked row stays a normal softmax
    out = softmax(x)
    assert not torch.isnan(out).any()
    torch.testing.assert_close(out[1], torch.zeros(6, device=device), rtol=0, atol=0)
    keep = torch.tensor([0, 2, 3], device=device)
    torch.testing.assert_close(out[keep], torch.softmax(x[keep], dim=-1))
    # negative control: torch's softmax gives NaN on the fully masked row
    assert torch.isnan(torch.softmax(x, dim=-1)[1]).all()


def test_all_minus_inf_column_along_dim0(randn, device):
    x = randn(5, 3)
    x[:, 2] = float("-inf")
    out = softmax(x, dim=0)
    torch.testing.assert_close(out[:, 2], torch.zeros(5, device=device), rtol=0, atol=0)
    torch.testing.assert_close(out[:, :2], torch.softmax(x[:, :2], dim=0))


def test_gradient_through_all_minus_inf_row_is_finite_and_zero(randn, device):
    x = randn(3, 5)
    x[0] = float("-inf")
    x[2, 1] = float("-inf")
    x.requires_grad_(True)
    upstream = randn(3, 5)
    (softmax(x) * upstream).sum().backward()
    assert torch.isfinite(x.grad).all()
    torch.testing.assert_close(x.grad[0], torch.zeros(5, device=device), rtol=0, atol=0)

    # the other rows have torch's gradient
    x_ref = x.detach()[1:].clone().requires_grad_(True)
    (torch.softmax(x_ref, dim=-1) * upstream[1:]).sum().backward()
    torch.testing.assert_close(x.grad[1:], x_ref.grad)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_keeps_dtype_and_is_close_to_float32(randn, dtype):
    x = randn(4, 9).to(dtype)
    out = softmax(x)
    assert out.dtype == dtype
    reference = softmax(x.float())  # the same (rounded) inputs in float32
    torch.testing.assert_close(out.float(), reference, atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(out.float(), torch.softmax(x.float(), dim=-1), atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_rows_sum_to_one_in_each_dtype(randn, device, dtype):
    x = randn(6, 10).to(dtype)
    out = softmax(x)
    assert out.dtype == dtype
    assert out.device.type == device.type
    tol = 2e-2 if dtype == torch.bfloat16 else None
    torch.testing.assert_close(
        out.float().sum(-1), torch.ones(6, device=device), atol=tol, rtol=tol
    )
    torch.testing.assert_close(out.float(), torch.softmax(x.float(), dim=-1), atol=tol, rtol=tol)


def test_float64_matches_torch_tightly(randn):
    x = randn(5, 7, dtype=torch.float64)
    torch.testing.assert_close(softmax(x), torch.softmax(x, dim=-1))


def test_shift_invariance(randn):
    x = randn(3, 8)
    torch.testing.assert_close(softmax(x + 100.0), softmax(x))


def test_integer_input_raises_type_error(device):
    x = torch.arange(6, device=device).reshape(2, 3)
    with pytest.raises(
        TypeError, match=r"x must be a floating-point tensor, got dtype torch\.int64.*x\.float\(\)"
    ):
        softmax(x)


def test_non_tensor_input_raises_type_error():
    with pytest.raises(TypeError, match=r"x must be a torch\.Tensor, got list"):
        softmax([1.0, 2.0, 3.0])
