"""attention_src.encoder: EncoderLayer against nn.TransformerEncoderLayer (through
from_torch), and the Encoder stack: embedding, positions, layers, final norm.

torch's TransformerEncoderLayer may take a "fast path" in eval mode when grad is
disabled, which returns arbitrary values at padded positions. The comparisons
below therefore keep grad enabled (no torch.no_grad) and, when there is padding,
compare only the real token positions.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from attention_src import (
    Encoder,
    EncoderLayer,
    MultiHeadAttention,
    causal_mask,
    padding_mask,
    sinusoidal_positional_encoding,
)

# (B, L, D, H, d_ff)
LAYER_SHAPES = [(2, 5, 8, 2, 16), (3, 7, 12, 3, 24), (1, 4, 16, 4, 8)]


def _randomize(module: nn.Module) -> nn.Module:
    """Non-trivial biases and LayerNorm scales (torch starts them at 0 and 1), so a
    missing or swapped bias or norm changes the outputs."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.uniform_(0.5, 1.5)
            elif name.endswith("bias"):
                p.normal_(0.0, 0.3)
    return module


def _torch_layer(D, H, d_ff, device, **kwargs) -> nn.TransformerEncoderLayer:
    layer = nn.TransformerEncoderLayer(D, H, d_ff, batch_first=True, **kwargs)
    return _randomize(layer.to(device)).eval()


def _lengths(B: int, L: int, device) -> torch.Tensor:
    return torch.tensor([max(1, L - 2 - i) if i % 2 == 0 else L for i in range(B)], device=device)


# --------------------------------------------------------------------------- EncoderLayer vs torch


@pytest.mark.parametrize("padding", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize(("B", "L", "D", "H", "d_ff"), LAYER_SHAPES)
def test_layer_from_torch_matches(randn, device, B, L, D, H, d_ff, norm_first, activation, padding):
    layer = _torch_layer(D, H, d_ff, device, activation=activation, norm_first=norm_first)
    ours = EncoderLayer.from_torch(layer)
    assert not ours.training and ours.norm_first == norm_first
    x = randn(B, L, D)
    if padding:
        mask = padding_mask(_lengths(B, L, device), L)  # (B, 1, 1, L), True = real token
        real = mask[:, 0, 0, :]  # (B, L)
        ref = layer(x, src_key_padding_mask=~real)  # grad enabled: no fast path
        out, weights = ours(x, mask=mask)
        torch.testing.assert_close(out[real], ref[real])
        assert (weights[~mask.expand(B, H, L, L)] == 0).all()
    else:
        ref = layer(x)
        out, weights = ours(x)
        torch.testing.assert_close(out, ref)
    assert out.shape == (B, L, D) and weights.shape == (B, H, L, L)


@pytest.mark.parametrize("norm_first", [False, True])
def test_layer_from_torch_without_bias(randn, device, norm_first):
    layer = _torch_layer(8, 2, 16, device, bias=False, norm_first=norm_first)
    ours = EncoderLayer.from_torch(layer)
    assert ours.ff.linear1.bias is None and ours.norm1.bias is None
    assert ours.self_attn.q_proj.bias is None
    x = randn(2, 6, 8)
    torch.testing.assert_close(ours(x)[0], layer(x))


@pytest.mark.parametrize("norm_first", [False, True])
def test_layer_from_torch_with_causal_mask(randn, device, norm_first):
    layer = _torch_layer(8, 2, 16, device, norm_first=norm_first)
    ours = EncoderLayer.from_torch(layer)
    x = randn(2, 6, 8)
    mask = causal_mask(6, device=device)
    torch.testing.assert_close(ours(x, mask=mask)[0], layer(x, src_mask=~mask))


def test_layer_from_torch_keeps_layer_norm_eps(randn, device):
    layer = _torch_layer(8, 2, 16, device, layer_norm_eps=1e-1)
    ours = EncoderLayer.from_torch(layer)
    assert ours.norm1.eps == 1e-1 and ours.norm2.eps == 1e-1
    x = randn(2, 4, 8) * 0.3
    torch.testing.assert_close(ours(x)[0], layer(x))


def test_layer_from_torch_accepts_activation_modules(randn, device):
    layer = _torch_layer(8, 2, 16, device, activation=nn.GELU())
    ours = EncoderLayer.from_torch(layer)
    assert ours.ff.activation == "gelu"
    x = randn(2, 4, 8) * 2
    torch.testing.assert_close(ours(x)[0], layer(x))


def test_layer_from_torch_in_float64_copies_weights_exactly(randn, device):
    layer = _torch_layer(8, 2, 16, device).double()
    with torch.no_grad():  # values that float32 cannot hold, so a float32 detour shows
        for p in layer.parameters():
            p.add_(torch.randn_like(p) * 1e-3)
    assert any(not torch.equal(p, p.float().double()) for p in layer.parameters())
    ours = EncoderLayer.from_torch(layer)
    pairs = {
        "ff.linear1.weight": layer.linear1.weight,
        "ff.linear1.bias": layer.linear1.bias,
        "ff.linear2.weight": layer.linear2.weight,
        "ff.linear2.bias": layer.linear2.bias,
        "norm1.weight": layer.norm1.weight,
        "norm1.bias": layer.norm1.bias,
        "norm2.weight": layer.norm2.weight,
        "norm2.bias": layer.norm2.bias,
        "self_attn.out_proj.weight": layer.self_attn.out_proj.weight,
    }
    params = dict(ours.named_parameters())
    for name, theirs in pairs.items():
        assert params[name].dtype == torch.float64, name
        assert torch.equal(params[name], theirs), name
    x = randn(2, 5, 8, dtype=torch.float64)
    torch.testing.assert_close(ours(x)[0], layer(x))


def test_layer_from_torch_follows_training_mode_and_dropout(device):
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.2, batch_first=True).to(device)
    ours = EncoderLayer.from_torch(layer)
    assert ours.training
    assert ours.self_attn.dropout == 0.2 and ours.dropout1.p == 0.2 and ours.ff.dropout.p == 0.2
    assert ours.ff.linear1.weight.device.type == device.type


def test_layer_from_torch_rejects_the_wrong_type():
    with pytest.raises(
        TypeError, match=r"layer must be an nn\.TransformerEncoderLayer, got Linear"
    ):
        EncoderLayer.from_torch(nn.Linear(4, 4))


@pytest.mark.parametrize("activation", [torch.tanh, nn.GELU(approximate="tanh")])
def test_layer_from_torch_rejects_other_activations(activation):
    layer = nn.TransformerEncoderLayer(8, 2, 16, activation=activation, batch_first=True)
    with pytest.raises(ValueError, match=r"unsupported activation .*; expected relu or gelu"):
        EncoderLayer.from_torch(layer)


# --------------------------------------------------------------------------- EncoderLayer behaviour


@pytest.mark.parametrize("norm_first", [False, True])
def test_layer_causal_outputs_ignore_future_tokens(randn, device, norm_first):
    layer = EncoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first).to(device).eval()
    L, t = 6, 2
    x = randn(2, L, 8)
    x2 = x.clone()
    x2[:, t + 1 :] = randn(2, L - t - 1, 8) * 5
    mask = causal_mask(L, device=device)
    torch.testing.assert_close(layer(x2, mask)[0][:, : t + 1], layer(x, mask)[0][:, : t + 1])
    # negative control: without the mask the earlier outputs change
    assert (layer(x2)[0][:, : t + 1] - layer(x)[0][:, : t + 1]).abs().max() > 1e-3


@pytest.mark.parametrize("norm_first", [False, True])
def test_layer_padding_does_not_change_real_tokens(randn, device, norm_first):
    layer = EncoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first).to(device).eval()
    mask = padding_mask(torch.tensor([5, 2, 3], device=device), 5)
    real = mask[:, 0, 0, :]
    x = randn(3, 5, 8)
    x2 = x.clone()
    x2[~real] = randn(int((~real).sum()), 8) * 10
    torch.testing.assert_close(layer(x2, mask)[0][real], layer(x, mask)[0][real])
    assert (layer(x2)[0][real] - layer(x)[0][real]).abs().max() > 1e-3


def test_layer_dropout_only_in_training(randn, device):
    layer = EncoderLayer(8, 2, 16, dropout=0.5).to(device)
    x = randn(2, 4, 8)
    layer.eval()
    assert torch.equal(layer(x)[0], layer(x)[0])
    layer.train()
    torch.manual_seed(5)
    a = layer(x)[0]
    torch.manual_seed(5)
    assert torch.equal(layer(x)[0], a)
    layer.eval()
    assert (a - layer(x)[0]).abs().max() > 1e-3


def test_layer_bad_num_heads():
    with pytest.raises(ValueError, match=r"d_model \(10\) must be divisible by num_heads \(4\)"):
        EncoderLayer(10, 4, 16)


def test_layer_bad_activation():
    with pytest.raises(
        ValueError, match=r"activation must be one of \['gelu', 'relu'\], got 'swish'"
    ):
        EncoderLayer(8, 2, 16, activation="swish")


# --------------------------------------------------------------------------- Encoder


def _tokens(B, L, vocab, device, gen):
    return torch.randint(0, vocab, (B, L), generator=gen, device=device)


def test_pre_norm_encoder_ends_with_layer_norm():
    enc = Encoder(20, 8, 2, 2, 16, norm_first=True)
    assert isinstance(enc.final_norm, nn.LayerNorm)
    assert enc.final_norm.normalized_shape == (8,)
    assert all(layer.norm_first for layer in enc.layers)


def test_post_norm_encoder_has_no_final_norm():
    enc = Encoder(20, 8, 2, 2, 16, norm_first=False)
    assert isinstance(enc.final_norm, nn.Identity)
    assert not any(layer.norm_first for layer in enc.layers)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize(
    ("B", "L", "D", "H", "N"), [(2, 5, 8, 2, 3), (1, 9, 12, 4, 1), (3, 1, 4, 1, 2)]
)
def test_encoder_shapes_and_weights(device, gen, B, L, D, H, N, norm_first):
    enc = Encoder(30, D, H, N, 2 * D, dropout=0.0, max_len=16, norm_first=norm_first).to(device)
    enc.eval()
    out, weights = enc(_tokens(B, L, 30, device, gen))
    assert out.shape == (B, L, D)
    assert isinstance(weights, list) and len(weights) == N
    for w in weights:
        assert w.shape == (B, H, L, L)
        torch.testing.assert_close(w.sum(-1), torch.ones(B, H, L, device=device))
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("padding", [False, True])
def test_encoder_built_from_torch_layers(device, gen, norm_first, padding):
    B, L, D, H, N, vocab = 3, 6, 8, 2, 2, 25
    enc = Encoder(vocab, D, H, N, 16, max_len=10, norm_first=norm_first).to(device).eval()
    torch_layers = [_torch_layer(D, H, 16, device, norm_first=norm_first) for _ in range(N)]
    enc.layers = nn.ModuleList(EncoderLayer.from_torch(layer) for layer in torch_layers)
    if norm_first:
        _randomize(enc.final_norm)

    tokens = _tokens(B, L, vocab, device, gen)
    mask = padding_mask(_lengths(B, L, device), L) if padding else None
    out, weights = enc(tokens, mask=mask)

    x = enc.embedding(tokens) * math.sqrt(D) + sinusoidal_positional_encoding(L, D, device=device)
    for layer in torch_layers:
        x = layer(x, src_key_padding_mask=None if mask is None else ~mask[:, 0, 0, :])
    if norm_first:
        x = nn.functional.layer_norm(
            x, (D,), enc.final_norm.weight, enc.final_norm.bias, enc.final_norm.eps
        )
    if padding:
        real = mask[:, 0, 0, :]
        torch.testing.assert_close(out[real], x[real])
    else:
        torch.testing.assert_close(out, x)
    assert len(weights) == N


def test_encoder_padding_does_not_change_real_tokens(device, gen):
    enc = Encoder(20, 8, 2, 2, 16, dropout=0.0, max_len=10).to(device).eval()
    tokens = _tokens(3, 6, 20, device, gen)
    mask = padding_mask(torch.tensor([6, 3, 1], device=device), 6)
    real = mask[:, 0, 0, :]
    tokens2 = tokens.clone()
    tokens2[~real] = (tokens[~real] + 7) % 20
    out, weights = enc(tokens, mask=mask)
    out2, _ = enc(tokens2, mask=mask)
    torch.testing.assert_close(out2[real], out[real])
    for w in weights:
        assert (w[~mask.expand(3, 2, 6, 6)] == 0).all()
    # negative control
    assert (enc(tokens2)[0][real] - enc(tokens)[0][real]).abs().max() > 1e-3


def test_encoder_is_deterministic_in_eval_mode(device, gen):
    enc = Encoder(20, 8, 2, 2, 16, dropout=0.3, max_len=10).to(device)
    tokens = _tokens(2, 5, 20, device, gen)
    enc.eval()
    assert torch.equal(enc(tokens)[0], enc(tokens)[0])
    enc.train()
    assert not torch.equal(enc(tokens)[0], enc.eval()(tokens)[0])


def test_encoder_layers_are_independent_modules():
    enc = Encoder(20, 8, 2, 3, 16)
    assert isinstance(enc.layers[0].self_attn, MultiHeadAttention)
    w0, w1 = enc.layers[0].self_attn.q_proj.weight, enc.layers[1].self_attn.q_proj.weight
    assert w0.data_ptr() != w1.data_ptr()
    assert not torch.equal(w0, w1)


# --------------------------------------------------------------------------- Encoder errors


def test_encoder_float_tokens(device):
    enc = Encoder(10, 8, 2, 1, 16).to(device)
    with pytest.raises(
        TypeError,
        match=r"tokens must be integer token ids \(torch\.long\), got dtype torch\.float32",
    ):
        enc(torch.zeros(2, 3, device=device))


def test_encoder_bool_tokens(device):
    enc = Encoder(10, 8, 2, 1, 16).to(device)
    with pytest.raises(TypeError, match=r"got dtype torch\.bool"):
        enc(torch.zeros(2, 3, dtype=torch.bool, device=device))


def test_encoder_non_tensor_tokens():
    with pytest.raises(TypeError, match=r"tokens must be a torch\.Tensor, got list"):
        Encoder(10, 8, 2, 1, 16)([[1, 2, 3]])


@pytest.mark.parametrize(("bad", "low", "high"), [(10, 0, 10), (-1, -1, 9), (25, 0, 25)])
def test_encoder_out_of_range_token_ids(device, bad, low, high):
    enc = Encoder(10, 8, 2, 1, 16).to(device)
    tokens = torch.tensor([[0, bad, 9]], device=device)
    tokens[0, 0] = min(0, bad)
    with pytest.raises(
        ValueError,
        match=rf"token ids must be in \[0, 10\), got values from {low} to {high} "
        r"\(tokens shape \(1, 3\)\)",
    ):
        enc(tokens)


def test_encoder_one_dimensional_tokens(device):
    enc = Encoder(10, 8, 2, 1, 16).to(device)
    with pytest.raises(
        ValueError,
        match=r"tokens must be 2-D \(B, L\), got 1-D shape \(3\); .*tokens\.unsqueeze\(0\)",
    ):
        enc(torch.tensor([1, 2, 3], device=device))


def test_encoder_sequence_longer_than_max_len(device):
    enc = Encoder(10, 8, 2, 1, 16, max_len=8).to(device)
    with pytest.raises(ValueError, match=r"sequence length 9 exceeds max_len=8"):
        enc(torch.zeros(1, 9, dtype=torch.long, device=device))


@pytest.mark.parametrize(
    ("args", "error", "pattern"),
    [
        ((0, 8, 2, 1, 16), ValueError, r"vocab_size must be positive, got 0"),
        ((10, 8, 2, 0, 16), ValueError, r"num_layers must be positive, got 0"),
        ((10, 8, 3, 1, 16), ValueError, r"d_model \(8\) must be divisible by num_heads \(3\)"),
        ((10, 8, 2, 1, 0), ValueError, r"d_ff must be positive, got 0"),
    ],
)
def test_encoder_bad_constructor_arguments(args, error, pattern):
    with pytest.raises(error, match=pattern):
        Encoder(*args)
