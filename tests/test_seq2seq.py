"""attention_src.seq2seq: the copy/reverse data, the two GRU encoder-decoders, training."""

from __future__ import annotations

import pytest
import torch

from attention_src import (
    BOS,
    Seq2SeqAttentionGRU,
    Seq2SeqGRU,
    accuracy_by_length,
    accuracy_by_position,
    make_seq2seq_batch,
    run_seq2seq_experiment,
    shift_right,
    train_seq2seq,
)
from attention_src.experiments.seq2seq_task import probe_final_state

V, H, E = 7, 16, 8  # vocabulary (BOS + 6 symbols), hidden and embedding widths
MODELS = [Seq2SeqGRU, Seq2SeqAttentionGRU]


def tokens(device, *shape, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(1, V, shape, generator=generator).to(device)


# ---------------------------------------------------------------- the data


@pytest.mark.parametrize("task", ["copy", "reverse"])
def test_batch_shapes_range_and_target(device, task):
    generator = torch.Generator().manual_seed(0)
    source, target = make_seq2seq_batch(32, 9, V, task=task, generator=generator, device=device)
    assert source.shape == target.shape == (32, 9)
    assert source.dtype == target.dtype == torch.long
    assert source.device.type == target.device.type == device.type
    assert source.min() >= 1 and source.max() <= V - 1  # never BOS
    assert len(source.unique()) == V - 1  # every symbol turns up in 288 draws
    expected = source.flip(1) if task == "reverse" else source
    assert torch.equal(target, expected)


def test_reverse_target_by_hand():
    generator = torch.Generator().manual_seed(3)
    source, target = make_seq2seq_batch(4, 5, V, task="reverse", generator=generator)
    for b in range(4):
        assert target[b].tolist() == list(reversed(source[b].tolist()))


def test_copy_target_is_a_new_tensor():
    source, target = make_seq2seq_batch(2, 3, V)
    target[0, 0] = BOS
    assert source[0, 0] != BOS


def test_batch_is_deterministic_under_a_seed():
    def draw(seed):
        return make_seq2seq_batch(8, 6, V, generator=torch.Generator().manual_seed(seed))[0]

    assert torch.equal(draw(5), draw(5))
    assert not torch.equal(draw(5), draw(6))


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


# ---------------------------------------------------------------- training


@pytest.mark.parametrize("model_class", MODELS)
def test_teacher_forced_loss_decreases(device, model_class):
    torch.manual_seed(0)
    model = model_class(V, H, E).to(device)
    losses = train_seq2seq(model, steps=30, batch_size=32, min_len=2, max_len=4, lr=0.02)
    assert len(losses) == 30
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < 0.75 * first
    assert not model.training  # left in eval mode


def test_training_is_deterministic_under_a_seed():
    def run(seed):
        torch.manual_seed(0)
        model = Seq2SeqAttentionGRU(V, H, E)
        return train_seq2seq(model, steps=5, batch_size=8, min_len=2, max_len=3, seed=seed)

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_accuracy_helpers(device):
    model = Seq2SeqGRU(V, H, E).to(device)
    by_length = accuracy_by_length(model, [2, 5], num_samples=16)
    assert len(by_length) == 2 and all(0.0 <= a <= 1.0 for a in by_length)
    by_position = accuracy_by_position(model, 5, num_samples=16)
    assert len(by_position) == 5 and all(0.0 <= a <= 1.0 for a in by_position)
    # the same samples: the mean over positions is the accuracy at that length
    assert abs(sum(by_position) / 5 - by_length[1]) < 1e-6


def test_run_experiment_returns_a_loadable_model():
    settings = dict(vocab_size=V, hidden_size=H, embed_size=E, steps=3, batch_size=4)
    result = run_seq2seq_experiment(attention=True, eval_lengths=(2, 3), **settings)
    assert set(result) == {"state_dict", "losses", "eval_lengths", "accuracy", "num_parameters"}
    assert len(result["losses"]) == 3 and len(result["accuracy"]) == 2
    model = Seq2SeqAttentionGRU(V, H, E)
    model.load_state_dict(result["state_dict"])
    assert result["num_parameters"] == sum(p.numel() for p in model.parameters())


# ---------------------------------------------------------------- input checks


def test_input_errors():
    model = Seq2SeqGRU(V, H, E)
    source = torch.randint(1, V, (2, 4))
    with pytest.raises(ValueError, match=r"task must be one of \('copy', 'reverse'\), got 'sort'"):
        make_seq2seq_batch(2, 4, V, task="sort")
    with pytest.raises(ValueError, match="vocab_size must be at least 3"):
        make_seq2seq_batch(2, 4, 2)
    with pytest.raises(ValueError, match="length must be positive, got 0"):
        make_seq2seq_batch(2, 0, V)
    with pytest.raises(TypeError, match=r"source must be integer token ids"):
        model.generate(source.float())
    with pytest.raises(ValueError, match=r"source must be 2-D \(B, L\), got 1-D"):
        model.generate(source[0])
    bad_ids = r"source: token ids must be in \[0, 7\), got values from 1 to 7"
    with pytest.raises(ValueError, match=bad_ids):
        model.generate(torch.tensor([[1, 7]]))
    with pytest.raises(ValueError, match="must have the same batch size"):
        model(source, torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"min_len \(5\) must not exceed max_len \(3\)"):
        train_seq2seq(model, steps=1, min_len=5, max_len=3)
    with pytest.raises(ValueError, match="hidden_size must be positive, got 0"):
        Seq2SeqGRU(V, 0)
    with pytest.raises(TypeError, match=r"source must be a torch\.Tensor, got list"):
        model.generate([[1, 2]])
    with pytest.raises(ValueError, match=r"target must be 2-D \(B, L\)"):
        shift_right(source[0])


# ---------------------------------------------------------------- the probe


def last_token_encoder(device) -> Seq2SeqGRU:
    """A Seq2SeqGRU whose final state is tanh(5 * one-hot(last token)), exactly.

    Embeddings are one-hot (E = H = V); the GRU's update gate is shut (its bias
    -30, so the new state replaces the old one) and its recurrent weights are
    zero, so each state depends on the current token only.
    """
    model = Seq2SeqGRU(V, V, V).to(device)
    gru = model.encoder
    with torch.no_grad():
        model.embed.weight.copy_(torch.eye(V))
        for p in (gru.weight_hh_l0, gru.bias_hh_l0, gru.weight_ih_l0, gru.bias_ih_l0):
            p.zero_()
        gru.bias_ih_l0[V : 2 * V] = -30.0  # gates in the order r, z, n: z = 0
        gru.weight_ih_l0[2 * V :] = 5.0 * torch.eye(V)  # n = tanh(5 x)
    return model.eval()


def test_probe_reads_exactly_what_the_final_state_holds(device):
    model = last_token_encoder(device)
    source = tokens(device, 4, 6)
    with torch.no_grad():
        final = model.encode(source)[1][0]  # (B, H)
    expected = torch.tanh(5.0 * torch.nn.functional.one_hot(source[:, -1], V).float())
    torch.testing.assert_close(final, expected)  # the construction holds
    accuracy = probe_final_state(model, 6, num_train=512, num_test=512)
    assert len(accuracy) == 6
    assert accuracy[-1] == 1.0  # the last token is in the state
    chance = 1 / (V - 1)
    assert all(a < chance + 0.1 for a in accuracy[:-1])  # the others are not


def test_probe_is_deterministic_and_in_range(device):
    model = Seq2SeqGRU(V, H, E).to(device).eval()
    first = probe_final_state(model, 5, num_train=64, num_test=32, seed=3)
    assert first == probe_final_state(model, 5, num_train=64, num_test=32, seed=3)
    assert len(first) == 5 and all(0.0 <= a <= 1.0 for a in first)
    # the encoder is left as it was
    before = {k: v.clone() for k, v in model.state_dict().items()}
    probe_final_state(model, 5, num_train=64, num_test=32)
    for k, v in model.state_dict().items():
        torch.testing.assert_close(v, before[k], rtol=0, atol=0)


def test_probe_input_errors():
    model = Seq2SeqGRU(V, H, E)
    with pytest.raises(TypeError, match=r"model must be a Seq2SeqGRU .* got GRU"):
        probe_final_state(model.encoder, 4)
    with pytest.raises(ValueError, match="length must be positive, got 0"):
        probe_final_state(model, 0)
    with pytest.raises(ValueError, match="num_train must be positive, got -1"):
        probe_final_state(model, 4, num_train=-1)
    with pytest.raises(ValueError, match=r"ridge must be >= 0, got -1\.0"):
        probe_final_state(model, 4, ridge=-1.0)
