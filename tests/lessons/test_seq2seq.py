"""attention_src.seq2seq: the two GRU encoder-decoders and shift_right. (The copy/reverse
data, the training, the evaluation and the probe: tests/lessons/test_seq2seq_task.py.)"""

from __future__ import annotations

import pytest
import torch

from attention_src import BOS, Seq2SeqAttentionGRU, Seq2SeqGRU, shift_right

V, H, E = 7, 16, 8  # vocabulary (BOS + 6 symbols), hidden and embedding widths
MODELS = [Seq2SeqGRU, Seq2SeqAttentionGRU]


def tokens(device, *shape, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(1, V, shape, generator=generator).to(device)


def test_shift_right(device):
    target = tokens(device, 3, 5)
    decoder_input = shift_right(target)
    assert decoder_input.shape == target.shape
    assert (decoder_input[:, 0] == BOS).all()
    assert torch.equal(decoder_input[:, 1:], target[:, :-1])


# ---------------------------------------------------------------- the models


@pytest.mark.parametrize("model_class", MODELS)
def test_forward_shapes(device, model_class):
    model = model_class(V, H, E).to(device)
    source, decoder_input = tokens(device, 3, 6), tokens(device, 3, 4, seed=1)
    logits, weights = model(source, decoder_input)
    assert logits.shape == (3, 4, V)
    states, final = model.encode(source)
    assert states.shape == (3, 6, H) and final.shape == (1, 3, H)
    torch.testing.assert_close(final[0], states[:, -1])  # the last state is the fixed vector
    if model_class is Seq2SeqGRU:
        assert weights is None
    else:
        assert weights.shape == (3, 4, 6)  # (B, L_out, L_in)


def test_attention_weights_are_distributions(device):
    model = Seq2SeqAttentionGRU(V, H, E).to(device)
    _, weights = model(tokens(device, 5, 7), tokens(device, 5, 3, seed=2))
    assert (weights >= 0).all()
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(5, 3, device=device))


def test_plain_model_reads_only_the_final_state(device):
    """Its readout ignores the encoder states: only the fixed vector reaches the decoder."""
    model = Seq2SeqGRU(V, H, E).to(device)
    decoder_states = torch.randn(2, 3, H, device=device)
    a, _ = model.readout(decoder_states, torch.randn(2, 5, H, device=device))
    b, _ = model.readout(decoder_states, torch.randn(2, 9, H, device=device))
    torch.testing.assert_close(a, b)


def test_attention_model_reads_the_encoder_states(device):
    model = Seq2SeqAttentionGRU(V, H, E).to(device)
    decoder_states = torch.randn(2, 3, H, device=device)
    a, _ = model.readout(decoder_states, torch.randn(2, 5, H, device=device))
    b, _ = model.readout(decoder_states, torch.randn(2, 5, H, device=device))
    assert not torch.allclose(a, b)


def test_parameter_counts_differ_only_in_the_readout():
    plain, attention = Seq2SeqGRU(V, H, E), Seq2SeqAttentionGRU(V, H, E)

    def count(m):
        return sum(p.numel() for p in m.parameters())

    assert count(attention) - count(plain) == H * V  # out: Linear(2H, V) instead of Linear(H, V)


@pytest.mark.parametrize("model_class", MODELS)
def test_generate_length_and_weights(device, model_class):
    model = model_class(V, H, E).to(device)
    source = tokens(device, 4, 6)
    out, weights = model.generate(source)
    assert out.shape == (4, 6) and out.dtype == torch.long
    assert out.min() >= 0 and out.max() < V
    out, weights = model.generate(source, length=9)
    assert out.shape == (4, 9)
    if model_class is Seq2SeqAttentionGRU:
        assert weights.shape == (4, 9, 6)
        torch.testing.assert_close(weights.sum(dim=-1), torch.ones(4, 9, device=device))
    else:
        assert weights is None


@pytest.mark.parametrize("model_class", MODELS)
def test_int32_ids_give_the_same_output(device, model_class):
    model = model_class(V, H, E).to(device)
    source = tokens(device, 3, 5)
    out_long, _ = model.generate(source)
    out_int, _ = model.generate(source.int())  # nn.Embedding takes any integer ids
    assert torch.equal(out_long, out_int)


@pytest.mark.parametrize("model_class", MODELS)
def test_greedy_decoding_agrees_with_teacher_forcing(device, model_class):
    """Feeding the greedy output back under teacher forcing reproduces it step by step."""
    model = model_class(V, H, E).to(device)
    source = tokens(device, 4, 5)
    out, weights = model.generate(source)
    with torch.no_grad():
        logits, forced_weights = model(source, shift_right(out))
    assert torch.equal(logits.argmax(dim=-1), out)
    if weights is not None:
        torch.testing.assert_close(forced_weights, weights)


# ---------------------------------------------------------------- input checks


def test_input_errors():
    model = Seq2SeqGRU(V, H, E)
    source = torch.randint(1, V, (2, 4))
    with pytest.raises(TypeError, match=r"source must be integer token ids"):
        model.generate(source.float())
    with pytest.raises(ValueError, match=r"source must be 2-D \(B, L\), got 1-D"):
        model.generate(source[0])
    bad_ids = r"source: token ids must be in \[0, 7\), got values from 1 to 7"
    with pytest.raises(ValueError, match=bad_ids):
        model.generate(torch.tensor([[1, 7]]))
    with pytest.raises(ValueError, match="must have the same batch size"):
        model(source, torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="hidden_size must be positive, got 0"):
        Seq2SeqGRU(V, 0)
    with pytest.raises(TypeError, match=r"source must be a torch\.Tensor, got list"):
        model.generate([[1, 2]])
    with pytest.raises(ValueError, match=r"target must be 2-D \(B, L\)"):
        shift_right(source[0])


def test_attention_readout_is_pytorchs_scaled_dot_product_attention(device):
    """The readout's weights and context are F.scaled_dot_product_attention's, with
    the decoder states as queries and the encoder states as keys and values."""
    model = Seq2SeqAttentionGRU(V, H, E).to(device)
    decoder_states = torch.randn(2, 3, H, device=device)
    encoder_states = torch.randn(2, 5, H, device=device)
    logits, weights = model.readout(decoder_states, encoder_states)
    context = torch.nn.functional.scaled_dot_product_attention(
        decoder_states, encoder_states, encoder_states
    )
    expected = model.out(torch.cat([decoder_states, context], dim=-1))
    torch.testing.assert_close(logits, expected)
    torch.testing.assert_close(weights @ encoder_states, context)
