"""attention_src.FeedForward: linear2(act(linear1(x))), the same MLP at every position."""

from __future__ import annotations

import math

import pytest
import torch

from attention_src import FeedForward


def _relu(h):
    return torch.where(h > 0, h, torch.zeros_like(h))


def _gelu(h):
    """The exact GELU, x * Phi(x), written with erf."""
    return 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))


def _manual(ff: FeedForward, x: torch.Tensor, act) -> torch.Tensor:
    w1, w2 = ff.linear1.weight, ff.linear2.weight
    hidden = x @ w1.T
    if ff.linear1.bias is not None:
        hidden = hidden + ff.linear1.bias
    out = act(hidden) @ w2.T
    if ff.linear2.bias is not None:
        out = out + ff.linear2.bias
    return out


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(("activation", "act"), [("relu", _relu), ("gelu", _gelu)])
@pytest.mark.parametrize(("B", "L", "D", "d_ff"), [(2, 5, 8, 32), (1, 1, 4, 4), (3, 7, 6, 10)])
def test_matches_manual_computation(randn, device, B, L, D, d_ff, activation, act, bias):
    ff = FeedForward(D, d_ff, activation=activation, bias=bias).to(device)
    assert (ff.linear1.bias is None) == (not bias)
    assert ff.linear1.weight.shape == (d_ff, D) and ff.linear2.weight.shape == (D, d_ff)
    x = randn(B, L, D) * 2
    out = ff(x)
    assert out.shape == (B, L, D)
    torch.testing.assert_close(out, _manual(ff, x, act))


def test_relu_and_gelu_differ(randn, device):
    """The activation argument is actually used (same weights, different outputs)."""
    relu = FeedForward(4, 16, activation="relu").to(device)
    gelu = FeedForward(4, 16, activation="gelu").to(device)
    gelu.load_state_dict(relu.state_dict())
    x = randn(2, 3, 4)
    assert (relu(x) - gelu(x)).abs().max() > 1e-3


def test_is_position_wise(randn, device):
    ff = FeedForward(6, 12).to(device)
    x = randn(2, 5, 6)
    out = ff(x)
    for t in range(5):
        torch.testing.assert_close(ff(x[:, t : t + 1]), out[:, t : t + 1])


def test_dropout_only_in_training(randn, device):
    ff = FeedForward(6, 12, dropout=0.5).to(device)
    x = randn(2, 5, 6)
    ff.eval()
    torch.testing.assert_close(ff(x), _manual(ff, x, _relu))
    ff.train()
    torch.manual_seed(1)
    a = ff(x)
    torch.manual_seed(1)
    b = ff(x)
    assert torch.equal(a, b)
    assert (a - _manual(ff, x, _relu)).abs().max() > 1e-3


def test_bad_activation():
    with pytest.raises(
        ValueError, match=r"activation must be one of \['gelu', 'relu'\], got 'tanh'"
    ):
        FeedForward(4, 8, activation="tanh")


def test_activation_must_be_a_name():
    with pytest.raises(
        TypeError,
        match=r"activation must be the name of one of \['gelu', 'relu'\], got function <function",
    ):
        FeedForward(4, 8, activation=torch.nn.functional.relu)
    assert FeedForward(4, 8, activation="relu").activation == "relu"  # the name works


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "pattern"),
    [
        ((0, 8), {}, ValueError, r"d_model must be positive, got 0"),
        ((4, 0), {}, ValueError, r"d_ff must be positive, got 0"),
        ((4, 8.5), {}, TypeError, r"d_ff must be an int, got float 8\.5"),
        ((4, 8), {"dropout": 1.0}, ValueError, r"dropout must be in \[0, 1\), got 1\.0"),
    ],
)
def test_bad_constructor_arguments(args, kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        FeedForward(*args, **kwargs)
