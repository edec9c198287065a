"""attention_src.Encoder.from_torch: our encoder built from an nn.TransformerEncoder and an
nn.Embedding computes embedding * sqrt(D) + sinusoidal positions -> the torch stack.

Comparisons keep grad enabled (no torch.no_grad), so PyTorch takes its ordinary path;
the fast path (eval + no_grad) is checked separately: it writes zeros at padded positions
of a post-norm stack, so only real positions can be compared.
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from torch import nn

from attention_src import Encoder, EncoderLayer, padding_mask, sinusoidal_positional_encoding

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
    with pytest.raises(ValueError, match=r"stack\.norm must be an nn\.LayerNorm or None, got"):
        Encoder.from_torch(stack, nn.Embedding(V, D))
