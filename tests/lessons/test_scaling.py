"""attention_src.scaling: the variance of q·k, softmax entropy and Jacobian, and the sweeps."""

from __future__ import annotations

import math

import pytest
import torch

from attention_src import (
    random_dot_products,
    saturation_sweep,
    softmax,
    softmax_entropy,
    softmax_jacobian,
    softmax_jacobian_norm,
    variance_sweep,
)


@pytest.mark.parametrize("d_k", [1, 8, 64, 512])
def test_dot_product_variance_is_d_k(device, gen, d_k):
    dots = random_dot_products(d_k, 20_000, generator=gen, device=device)
    assert dots.shape == (20_000,)
    assert dots.device.type == device.type
    # the sample variance of 20 000 draws is within a few percent of d_k
    assert abs(dots.var().item() / d_k - 1) < 0.1
    assert abs(dots.mean().item()) < 0.1 * math.sqrt(d_k)


def test_dot_product_variance_scales_with_std_to_the_fourth(device, gen):
    dots = random_dot_products(16, 20_000, std=2.0, generator=gen, device=device)
    assert abs(dots.var().item() / (16 * 2.0**4) - 1) < 0.1


def test_random_dot_products_deterministic_under_a_seed(device):
    a = random_dot_products(8, 100, generator=torch.Generator(device=device).manual_seed(3))
    b = random_dot_products(8, 100, generator=torch.Generator(device=device).manual_seed(3))
    c = random_dot_products(8, 100, generator=torch.Generator(device=device).manual_seed(4))
    assert torch.equal(a.cpu(), b.cpu())
    assert not torch.equal(a.cpu(), c.cpu())


def test_entropy_of_uniform_and_one_hot(device):
    S = 8
    uniform = torch.full((3, S), 1 / S, device=device)
    torch.testing.assert_close(
        softmax_entropy(uniform), torch.full((3,), math.log(S), device=device)
    )
    one_hot = torch.zeros(2, S, device=device)
    one_hot[0, 3] = 1.0
    one_hot[1, 0] = 1.0
    entropy = softmax_entropy(one_hot)
    assert not torch.isnan(entropy).any()  # 0 log 0 counts as 0, not NaN
    torch.testing.assert_close(entropy, torch.zeros(2, device=device))


def test_entropy_matches_torch_distributions(randn):
    p = softmax(randn(5, 7) * 2)
    reference = torch.distributions.Categorical(probs=p).entropy()
    torch.testing.assert_close(softmax_entropy(p), reference)
    torch.testing.assert_close(softmax_entropy(p.T, dim=0), reference)


def test_jacobian_matches_autograd(randn):
    x = randn(6, dtype=torch.float64)
    reference = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, dim=-1), x)
    torch.testing.assert_close(softmax_jacobian(torch.softmax(x, dim=-1)), reference)


def test_jacobian_is_batched(randn):
    p = softmax(randn(2, 3, 5))
    J = softmax_jacobian(p)
    assert J.shape == (2, 3, 5, 5)
    torch.testing.assert_close(J[1, 2], softmax_jacobian(p[1, 2]))
    # rows of a softmax Jacobian sum to 0: adding a constant to every score changes nothing
    torch.testing.assert_close(J.sum(dim=-1), torch.zeros(2, 3, 5, device=p.device))


def test_jacobian_norm_closed_form_matches_matrix_norm(randn):
    p = softmax(randn(4, 9) * 3)
    by_matrix = torch.linalg.matrix_norm(softmax_jacobian(p))  # Frobenius by default
    torch.testing.assert_close(softmax_jacobian_norm(p), by_matrix)


def test_jacobian_norm_limits(device):
    S = 10
    one_hot = torch.zeros(S, device=device)
    one_hot[4] = 1.0
    assert softmax_jacobian_norm(one_hot).item() == 0.0
    uniform = torch.full((S,), 1 / S, device=device)
    expected = math.sqrt((S - 1) / S**2)
    assert softmax_jacobian_norm(uniform).item() == pytest.approx(expected, rel=1e-5)


def test_jacobian_norm_is_the_gradient_bound(randn):
    """The gradient reaching the scores is J^T g, so its norm is at most ||J|| ||g||."""
    scores = randn(12, requires_grad=True)
    g = randn(12)
    p = torch.softmax(scores, dim=-1)
    (p * g).sum().backward()
    assert scores.grad.norm() <= softmax_jacobian_norm(p.detach()) * g.norm() + 1e-6


def test_variance_sweep(device):
    d_ks = [1, 16, 256]
    result = variance_sweep(d_ks, num_samples=20_000, device=device)
    assert result["d_k"] == d_ks
    for d_k, unscaled, scaled in zip(d_ks, result["unscaled"], result["scaled"], strict=True):
        assert abs(unscaled / d_k - 1) < 0.1
        assert abs(scaled - 1) < 0.1
    assert variance_sweep(d_ks, num_samples=500, device=device) == variance_sweep(
        d_ks, num_samples=500, device=device
    )


def test_saturation_sweep_shows_saturation_without_scaling(device):
    d_ks = [1, 16, 256, 1024]
    r = saturation_sweep(d_ks, num_keys=16, num_queries=500, device=device)
    assert r["d_k"] == d_ks
    keys = {
        f"{m}_{s}" for m in ("max_weight", "entropy", "jacobian") for s in ("unscaled", "scaled")
    }
    assert set(r) == keys | {"d_k"}
    assert all(len(v) == len(d_ks) for v in r.values())
    # d_k = 1: scaling divides by 1, so both columns agree
    for m in ("max_weight", "entropy", "jacobian"):
        assert r[f"{m}_unscaled"][0] == pytest.approx(r[f"{m}_scaled"][0])
    # without scaling: ever more peaked, entropy falling, the Jacobian vanishing
    assert r["entropy_unscaled"] == sorted(r["entropy_unscaled"], reverse=True)
    assert r["max_weight_unscaled"] == sorted(r["max_weight_unscaled"])
    assert r["jacobian_unscaled"][-1] < r["jacobian_scaled"][-1] / 3
    # with scaling: the same spread whatever d_k
    assert max(r["entropy_scaled"]) - min(r["entropy_scaled"]) < 0.2
    assert all(0 < e <= math.log(16) for e in r["entropy_scaled"])


def test_saturation_sweep_deterministic(device):
    a = saturation_sweep([4, 32], num_queries=50, seed=1, device=device)
    b = saturation_sweep([4, 32], num_queries=50, seed=1, device=device)
    assert a == b


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: random_dot_products(0, 10), ValueError, "d_k must be positive"),
        (lambda: random_dot_products(4.0, 10), TypeError, "d_k must be an int"),
        (lambda: random_dot_products(4, 10, std=0.0), ValueError, "std must be positive"),
        (lambda: random_dot_products(4, 10, std="1"), TypeError, "std must be a positive number"),
        (lambda: variance_sweep([]), TypeError, "d_ks must be a non-empty list"),
        (lambda: variance_sweep(64), TypeError, "d_ks must be a non-empty list"),
        (lambda: saturation_sweep([4, -2]), ValueError, "each d_k in d_ks must be positive"),
        (lambda: saturation_sweep([4], num_keys=0), ValueError, "num_keys must be positive"),
        (lambda: softmax_entropy(torch.ones(3, dtype=torch.long)), TypeError, "weights must be"),
        (lambda: softmax_jacobian([0.5, 0.5]), TypeError, "weights must be a torch"),
    ],
)
def test_input_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
