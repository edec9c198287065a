"""Tests of attention_src.encoder_decoder (The encoder–decoder Transformer):
DecoderLayer against nn.TransformerDecoderLayer (through from_torch, post- and
pre-norm, relu and gelu, with and without bias), the masks it applies, the
EncoderDecoder model (shapes, shared embeddings, padding, generation), and the
error messages."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attention_src import causal_mask, padding_mask
from attention_src.encoder_decoder import DecoderLayer, EncoderDecoder

from .helpers import randomize

# (B, L, S, D, H, d_ff)
SHAPES = [(2, 5, 7, 8, 2, 16), (3, 4, 4, 12, 3, 24), (1, 6, 3, 16, 4, 8)]


def _torch_layer(D, H, d_ff, device, **kwargs) -> nn.TransformerDecoderLayer:
    layer = nn.TransformerDecoderLayer(D, H, d_ff, dropout=0.0, batch_first=True, **kwargs)
    return randomize(layer.to(device), bias_std=0.3, norms=True).eval()


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize(("B", "L", "S", "D", "H", "d_ff"), SHAPES)
def test_layer_equals_torch(randn, device, norm_first, B, L, S, D, H, d_ff):
    reference = _torch_layer(D, H, d_ff, device, norm_first=norm_first)
    ours = DecoderLayer.from_torch(reference)
    assert ours.norm_first == norm_first and not ours.training
    x, memory = randn(B, L, D), randn(B, S, D)
    lengths = torch.tensor([max(1, S - i) for i in range(B)], device=device)
    self_mask, memory_mask = causal_mask(L, device=device), padding_mask(lengths)
    expected = reference(
        x, memory, tgt_mask=~self_mask, memory_key_padding_mask=~memory_mask[:, 0, 0]
    )
    got, self_w, cross_w = ours(x, memory, self_mask, memory_mask)
    torch.testing.assert_close(got, expected)
    assert self_w.shape == (B, H, L, L) and cross_w.shape == (B, H, L, S)
    assert (self_w[..., ~self_mask] == 0).all()
    for b, n in enumerate(lengths.tolist()):
        assert (cross_w[b, :, :, n:] == 0).all()
        assert (cross_w[b, :, :, :n] > 0).all()


@pytest.mark.parametrize("kwargs", [dict(activation="gelu"), dict(bias=False)])
def test_layer_settings_copy(randn, device, kwargs):
    reference = _torch_layer(8, 2, 16, device, **kwargs)
    ours = DecoderLayer.from_torch(reference)
    x, memory = randn(2, 3, 8), randn(2, 5, 8)
    torch.testing.assert_close(ours(x, memory)[0], reference(x, memory))


def test_cross_attention_reads_memory_and_not_the_future(randn, device):
    layer = DecoderLayer(8, 2, 16, dropout=0.0).to(device).eval()
    x, memory = randn(1, 4, 8), randn(1, 6, 8)
    mask = causal_mask(4, device=device)
    out = layer(x, memory, mask)[0]
    later_memory = memory.clone()
    later_memory[:, -1] += 1.0  # the last source position
    assert not torch.allclose(layer(x, later_memory, mask)[0][:, 0], out[:, 0])
    later_x = x.clone()
    later_x[:, -1] += 1.0  # the last target position
    torch.testing.assert_close(layer(later_x, memory, mask)[0][:, :3], out[:, :3])


def _model(device, **kwargs):
    settings = dict(
        vocab_size=10,
        d_model=16,
        num_heads=2,
        num_layers=2,
        d_ff=32,
        dropout=0.0,
        max_len=20,
        norm_first=True,
    )
    return EncoderDecoder(**{**settings, **kwargs}).to(device).eval()


@pytest.mark.parametrize("norm_first", [False, True])
def test_model_shapes_and_embeddings(device, gen, norm_first):
    model = _model(device, norm_first=norm_first)
    separate = _model(device, norm_first=norm_first, share_embeddings=False)
    assert model.target_embedding is model.encoder.embedding
    extra = sum(p.numel() for p in separate.parameters()) - sum(
        p.numel() for p in model.parameters()
    )
    assert extra == 10 * 16
    source = torch.randint(1, 10, (3, 7), device=device, generator=gen)
    decoder_input = torch.randint(0, 10, (3, 5), device=device, generator=gen)
    logits, maps = model(source, decoder_input)
    assert logits.shape == (3, 5, 10)
    assert len(maps) == 2 and maps[0].shape == (3, 2, 5, 7)


def test_padding_changes_nothing(device, gen):
    model = _model(device)
    real = torch.randint(1, 10, (1, 6), device=device, generator=gen)
    junk = torch.randint(1, 10, (1, 3), device=device, generator=gen)
    padded = torch.cat([real, junk], dim=1)  # (1, 9)
    mask = padding_mask(torch.tensor([6], device=device), max_len=9)
    decoder_input = torch.randint(0, 10, (1, 4), device=device, generator=gen)
    logits_padded, maps = model(padded, decoder_input, mask)
    logits_alone, _ = model(real, decoder_input)
    torch.testing.assert_close(logits_padded, logits_alone)
    assert (maps[0][..., 6:] == 0).all()
    written, weights = model.generate(padded, length=6, source_mask=mask)
    alone, _ = model.generate(real)
    assert torch.equal(written, alone) and written.shape == (1, 6)
    assert weights[-1].shape == (1, 2, 6, 9)


def test_generate_matches_teacher_forcing_on_its_own_output(device, gen):
    model = _model(device)
    source = torch.randint(1, 10, (2, 5), device=device, generator=gen)
    written, weights = model.generate(source, length=4)
    start = torch.zeros(2, 1, dtype=torch.long, device=device)  # BOS
    logits, maps = model(source, torch.cat([start, written[:, :-1]], dim=1))
    assert torch.equal(logits.argmax(dim=-1), written)
    torch.testing.assert_close(maps[-1], weights[-1])


def test_layer_errors_name_the_argument(randn, device):
    layer = DecoderLayer(8, 2, 16).to(device)
    x, memory = randn(2, 4, 8), randn(2, 6, 8)
    with pytest.raises(ValueError, match=r"memory has 6 features.*d_model=8"):
        layer(x, randn(2, 6, 6))
    with pytest.raises(ValueError, match=r"memory must be 3-D \(B, S, D\)"):
        layer(x, randn(6, 8))
    batch = r"same batch size B, got x \(2, 4, 8\) and memory \(3, 6, 8\)"
    with pytest.raises(ValueError, match=batch):
        layer(x, randn(3, 6, 8))
    wrong = padding_mask(torch.tensor([5, 4], device=device))  # (2, 1, 1, 5)
    with pytest.raises(ValueError, match=r"memory_mask: mask of shape \(2, 1, 1, 5\)"):
        layer(x, memory, None, wrong)
    with pytest.raises(TypeError, match=r"memory_mask: mask must be a bool tensor"):
        layer(x, memory, None, torch.ones(2, 1, 1, 6, dtype=torch.long, device=device))
    with pytest.raises(TypeError, match=r"layer must be an nn.TransformerDecoderLayer"):
        DecoderLayer.from_torch(nn.TransformerEncoderLayer(8, 2))


def test_model_errors_name_the_argument(device):
    model = _model(device)
    source = torch.ones(2, 5, dtype=torch.long, device=device)
    decoder_input = torch.zeros(2, 3, dtype=torch.long, device=device)
    with pytest.raises(TypeError, match=r"source must be integer token ids"):
        model(source.float(), decoder_input)
    with pytest.raises(ValueError, match=r"must have the same batch size"):
        model(source, decoder_input[:1])
    with pytest.raises(ValueError, match=r"decoder_input has length 25.*max_len=20"):
        model(source, torch.zeros(2, 25, dtype=torch.long, device=device))
    wrong = padding_mask(torch.tensor([4, 3], device=device))  # S = 4, not 5
    with pytest.raises(ValueError, match=r"source_mask: mask of shape \(2, 1, 1, 4\)"):
        model(source, decoder_input, wrong)
    with pytest.raises(ValueError, match=r"length 21 exceeds.*max_len=20"):
        model.generate(source, length=21)
