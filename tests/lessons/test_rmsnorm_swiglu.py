"""attention_src.rmsnorm and attention_src.swiglu: RMSNorm equal to torch.nn.RMSNorm,
SwiGLU equal to transformers' LlamaMLP on the same weights, in float32 and float64;
and the input checks."""

from __future__ import annotations

import os

import pytest
import torch
from torch import nn

from attention_src.rmsnorm import RMSNorm
from attention_src.swiglu import SwiGLU

os.environ.setdefault("HF_HUB_OFFLINE", "1")
llama = pytest.importorskip("transformers.models.llama.modeling_llama")
LlamaConfig = pytest.importorskip("transformers").LlamaConfig

DTYPES = [torch.float32, torch.float64]


def _tol(dtype):
    return dict(atol=1e-12, rtol=1e-12) if dtype == torch.float64 else {}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "eps"), [((2, 5, 16), 1e-6), ((7,), 1e-5), ((3, 2, 4, 64), 0.1)])
def test_rmsnorm_equals_torch(device, randn, dtype, shape, eps):
    D = shape[-1]
    ours = RMSNorm(D, eps=eps).to(device, dtype)
    ref = nn.RMSNorm(D, eps=eps).to(device, dtype)
    with torch.no_grad():
        ours.weight.uniform_(0.5, 1.5)
        ref.weight.copy_(ours.weight)
    x = randn(*shape, dtype=dtype) * 3
    out = ours(x)
    assert out.shape == x.shape and out.dtype == dtype
    torch.testing.assert_close(out, ref(x), **_tol(dtype))
    # and the state dict loads into the reference's name, "weight"
    assert list(ours.state_dict()) == ["weight"]


def test_rmsnorm_is_not_layernorm(device, randn):
    """A negative control: a shifted input changes RMSNorm's output (no mean is taken
    out), LayerNorm's not."""
    x = randn(4, 8, dtype=torch.float64)
    norm = RMSNorm(8).to(device, torch.float64)
    assert (norm(x + 3) - norm(x)).abs().max() > 0.1
    layer = nn.LayerNorm(8, elementwise_affine=False).to(device, torch.float64)
    torch.testing.assert_close(layer(x + 3), layer(x))
    rms = norm(x).pow(2).mean(-1).sqrt()
    torch.testing.assert_close(rms, torch.ones_like(rms), atol=1e-5, rtol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("D", "hidden"), [(16, 40), (576, 1536)])
def test_swiglu_equals_llama_mlp(device, randn, dtype, D, hidden):
    config = LlamaConfig(
        hidden_size=D, intermediate_size=hidden, hidden_act="silu", num_attention_heads=2
    )
    ref = llama.LlamaMLP(config).to(device, dtype)
    ours = SwiGLU(D, hidden).to(device, dtype)
    ours.load_state_dict(ref.state_dict())  # gate_proj, up_proj, down_proj
    x = randn(2, 3, D, dtype=dtype)
    torch.testing.assert_close(ours(x), ref(x), **_tol(dtype))
    other = SwiGLU(D, hidden).to(device, dtype)  # a negative control: other weights
    assert (other(x) - ref(x)).abs().max() > 1e-3


def test_swiglu_with_bias(device, randn):
    layer = SwiGLU(8, 12, bias=True).to(device)
    assert all(m.bias is not None for m in (layer.gate_proj, layer.up_proj, layer.down_proj))
    x = randn(5, 8)
    a, b = layer.gate_proj(x), layer.up_proj(x)
    torch.testing.assert_close(layer(x), layer.down_proj(a * torch.sigmoid(a) * b))


def test_errors(device, randn):
    with pytest.raises(ValueError, match=r"end in dim=8 features"):
        RMSNorm(8).to(device)(randn(2, 4))
    with pytest.raises(ValueError, match=r"eps must be a number >= 0, got -1\.0"):
        RMSNorm(8, eps=-1.0)
    with pytest.raises(TypeError, match=r"eps must be a number >= 0, got str '1e-6'"):
        RMSNorm(8, eps="1e-6")
    with pytest.raises(ValueError, match="dim must be positive"):
        RMSNorm(0)
    with pytest.raises(TypeError, match="floating-point"):
        RMSNorm(4).to(device)(torch.ones(4, dtype=torch.long, device=device))
    with pytest.raises(ValueError, match=r"end in d_model=8 features"):
        SwiGLU(8, 16).to(device)(randn(3, 5))
    with pytest.raises(ValueError, match="d_hidden must be positive"):
        SwiGLU(8, 0)


@pytest.mark.parametrize("make", [lambda: RMSNorm(8), lambda: SwiGLU(8, 16)])
def test_the_shape_is_checked_before_the_dtype(device, make):
    """Integer token ids (2, 5) get the shape error, not advice to call .float() that would
    only lead into it; integers of the right shape get the .float() advice, and it works."""
    layer = make().to(device)
    with pytest.raises(ValueError, match=r"features \(\.\.\., D\), got shape \(2, 5\)"):
        layer(torch.ones(2, 5, dtype=torch.long, device=device))
    x = torch.ones(2, 8, dtype=torch.long, device=device)
    with pytest.raises(TypeError, match=r"convert it with x\.float\(\)"):
        layer(x)
    assert layer(x.float()).shape == (2, 8)
