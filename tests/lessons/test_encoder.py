"""attention_src.encoder: EncoderLayer against nn.TransformerEncoderLayer (through
from_torch), the Encoder stack (embedding, positions, layers, final norm), and
Encoder.from_torch: our encoder built from an nn.TransformerEncoder and an nn.Embedding
computes embedding * sqrt(D) + sinusoidal positions -> the torch stack.

torch's TransformerEncoderLayer may take a "fast path" in eval mode when grad is
disabled, which returns arbitrary values at padded positions (a post-norm stack writes
zeros there). The comparisons below therefore keep grad enabled (no torch.no_grad) and,
when there is padding, compare only the real token positions; the fast path itself is
checked separately, on the real positions.
"""

from __future__ import annotations

import math
import warnings

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

from .helpers import assert_ignores_future_tokens, padded_lengths, randomize

# (B, L, D, H, d_ff)
LAYER_SHAPES = [(2, 5, 8, 2, 16), (3, 7, 12, 3, 24), (1, 4, 16, 4, 8)]


def _torch_layer(D, H, d_ff, device, **kwargs) -> nn.TransformerEncoderLayer:
    layer = nn.TransformerEncoderLayer(D, H, d_ff, batch_first=True, **kwargs)
    return randomize(layer.to(device), bias_std=0.3, norms=True).eval()


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
        # (B, 1, 1, L), True = real token
        mask = padding_mask(padded_lengths(B, L, device, cut=2), L)
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
    assert_ignores_future_tokens(layer, randn)


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


@pytest.mark.parametrize("norm_first", [False, True])
def test_layer_given_a_sequence_for_its_mask_says_it_takes_none(randn, norm_first):
    layer = EncoderLayer(8, 2, 16, norm_first=norm_first)
    x, other = randn(2, 5, 8), randn(2, 7, 8)
    with pytest.raises(
        TypeError,
        match=r"the second argument of EncoderLayer\.forward is the mask, got a float "
        r"tensor of shape \(2, 7, 8\), which looks like a sequence \(B, S, D\); an "
        r"encoder layer attends within x only \(self-attention\) and takes no second "
        r"sequence: call layer\(x\) or layer\(x, mask\)$",
    ) as error:
        layer(x, other)
    assert "context" not in str(error.value)  # advises nothing the layer lacks
    mask = padding_mask(torch.tensor([5, 3], device=x.device))  # a real mask passes
    assert layer(x, mask)[0].shape == (2, 5, 8)


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
        randomize(enc.final_norm, bias_std=0.3, norms=True)

    tokens = _tokens(B, L, vocab, device, gen)
    mask = padding_mask(padded_lengths(B, L, device, cut=2), L) if padding else None
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


def test_encoder_takes_the_integer_dtypes_an_embedding_takes(device):
    enc = Encoder(10, 8, 2, 1, 16).to(device).eval()
    tokens = torch.tensor([[1, 2, 3]], device=device)
    with pytest.raises(
        TypeError,
        match=r"tokens must be integer token ids \(torch\.long\), got dtype torch\.uint8; an "
        r"Encoder embeds ids itself",
    ):
        enc(tokens.to(torch.uint8))
    torch.testing.assert_close(enc(tokens.int())[0], enc(tokens)[0], rtol=0, atol=0)


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


# --------------------------------------------------------------------------- Encoder.from_torch

# the torch stack: N layers of width D with H heads and feed-forward size D_FF, V tokens
V, D, H, D_FF, N = 17, 8, 2, 16, 3


def _stack(device, *, norm_first=False, final_norm=None, **kwargs) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(
        D, H, D_FF, batch_first=True, norm_first=norm_first, **kwargs
    )
    if final_norm is None:
        final_norm = norm_first
    stack = nn.TransformerEncoder(
        layer, N, norm=nn.LayerNorm(D) if final_norm else None, enable_nested_tensor=False
    )
    with torch.no_grad():  # distinct layers, non-trivial norms and biases
        for p in stack.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return stack.to(device).eval()


def _reference(stack, embedding, tokens, real=None):
    L = tokens.size(1)
    x = embedding(tokens) * math.sqrt(D) + sinusoidal_positional_encoding(
        L, D, device=tokens.device, dtype=embedding.weight.dtype
    )
    return stack(x, src_key_padding_mask=None if real is None else ~real)


def _batch(device, gen, B=3, L=7):
    tokens = torch.randint(0, V, (B, L), generator=gen, device=device)
    lengths = torch.tensor([L, L - 3, 2][:B], device=device)
    return tokens, padding_mask(lengths, L)


@pytest.mark.parametrize("padding", [False, True])
@pytest.mark.parametrize(
    ("norm_first", "final_norm"), [(False, False), (True, True), (False, True), (True, False)]
)
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_from_torch_matches_the_stack(device, gen, norm_first, final_norm, activation, padding):
    stack = _stack(device, norm_first=norm_first, final_norm=final_norm, activation=activation)
    embedding = nn.Embedding(V, D).to(device)
    ours = Encoder.from_torch(stack, embedding, max_len=10)
    assert not ours.training
    assert isinstance(ours.final_norm, nn.LayerNorm if final_norm else nn.Identity)
    tokens, mask = _batch(device, gen)
    out, weights = ours(tokens, mask=mask if padding else None)
    if padding:
        real = mask[:, 0, 0, :]
        ref = _reference(stack, embedding, tokens, real)
        torch.testing.assert_close(out[real], ref[real])
    else:
        torch.testing.assert_close(out, _reference(stack, embedding, tokens))
    assert len(weights) == N and weights[0].shape == (3, H, 7, 7)


def test_from_torch_copies_every_layer_in_order(device):
    stack = _stack(device)
    ours = Encoder.from_torch(stack, nn.Embedding(V, D).to(device))
    assert len(ours.layers) == N
    for mine, theirs in zip(ours.layers, stack.layers, strict=True):
        assert isinstance(mine, EncoderLayer)
        assert torch.equal(mine.ff.linear1.weight, theirs.linear1.weight)
        assert torch.equal(mine.norm2.bias, theirs.norm2.bias)
    # the layers differ (the stack deep-copies one layer; _stack perturbed them)
    assert not torch.equal(ours.layers[0].ff.linear1.weight, ours.layers[1].ff.linear1.weight)


def test_from_torch_copies_the_embedding_and_settings(device):
    stack = _stack(device, norm_first=True, dropout=0.3, layer_norm_eps=1e-3)
    stack.norm.eps = 1e-2
    embedding = nn.Embedding(V, D, padding_idx=0).to(device)
    ours = Encoder.from_torch(stack, embedding, max_len=32)
    assert torch.equal(ours.embedding.weight, embedding.weight)
    assert ours.embedding.padding_idx == 0
    assert ours.embedding.weight.data_ptr() != embedding.weight.data_ptr()  # a copy
    assert ours.vocab_size == V and ours.d_model == D and ours.positional.max_len == 32
    assert ours.positional.dropout.p == 0.3 and ours.layers[0].dropout1.p == 0.3
    assert ours.final_norm.eps == 1e-2 and ours.layers[0].norm1.eps == 1e-3
    assert torch.equal(ours.final_norm.weight, stack.norm.weight)
    assert ours.embedding.weight.device.type == device.type


def test_from_torch_follows_training_mode(device):
    stack = _stack(device).train()
    ours = Encoder.from_torch(stack, nn.Embedding(V, D).to(device))
    assert ours.training and all(layer.training for layer in ours.layers)


def test_from_torch_in_float64(device, gen):
    stack = _stack(device).double()
    embedding = nn.Embedding(V, D).to(device).double()
    ours = Encoder.from_torch(stack, embedding, max_len=10)
    assert ours.embedding.weight.dtype == torch.float64
    assert all(p.dtype == torch.float64 for p in ours.parameters())
    tokens, _ = _batch(device, gen)
    torch.testing.assert_close(ours(tokens)[0], _reference(stack, embedding, tokens))


def test_fast_path_zeros_padding_but_real_positions_agree(device, gen):
    layer = nn.TransformerEncoderLayer(D, H, D_FF, batch_first=True)
    stack = nn.TransformerEncoder(layer, N).to(device).eval()  # nested tensors on
    embedding = nn.Embedding(V, D).to(device)
    ours = Encoder.from_torch(stack, embedding, max_len=10)
    tokens, mask = _batch(device, gen)
    real = mask[:, 0, 0, :]
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = _reference(stack, embedding, tokens, real)
        out, _ = ours(tokens, mask=mask)
    torch.testing.assert_close(out[real], fast[real])
    assert (fast[~real] == 0).all()
    assert (out[~real] != 0).any()  # ours computes padded positions (they are never used)


def test_from_torch_rejects_wrong_types():
    stack = _stack("cpu")
    with pytest.raises(TypeError, match=r"stack must be an nn\.TransformerEncoder, got Linear"):
        Encoder.from_torch(nn.Linear(D, D), nn.Embedding(V, D))
    with pytest.raises(TypeError, match=r"embedding must be an nn\.Embedding, got Linear"):
        Encoder.from_torch(stack, nn.Linear(V, D))


def test_from_torch_rejects_a_width_mismatch():
    with pytest.raises(
        ValueError, match=r"embedding width 12 does not match the layers' d_model=8"
    ):
        Encoder.from_torch(_stack("cpu"), nn.Embedding(V, 12))


def test_from_torch_rejects_a_final_norm_that_is_not_layer_norm():
    stack = _stack("cpu")
    stack.norm = nn.Identity()
    with pytest.raises(TypeError, match=r"stack\.norm must be an nn\.LayerNorm or None, got"):
        Encoder.from_torch(stack, nn.Embedding(V, D))
