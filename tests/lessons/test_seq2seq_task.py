"""attention_src.experiments.seq2seq_task: the copy/reverse data, the training of the two GRU
encoder-decoders (through the one loop), greedy-decoding accuracy, and the linear probe."""

from __future__ import annotations

import pytest
import torch

from attention_src import BOS, Seq2SeqAttentionGRU, Seq2SeqGRU, shift_right
from attention_src.experiments.seq2seq_task import (
    accuracy_by_length,
    accuracy_by_position,
    make_seq2seq_batch,
    probe_final_state,
    run_seq2seq_experiment,
    teacher_forcing_loss,
    train_seq2seq,
)

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


def test_teacher_forcing_loss_reads_the_shifted_target(device):
    torch.manual_seed(0)
    model = Seq2SeqAttentionGRU(V, H, E).to(device)
    source = tokens(device, 3, 5)
    target = source.flip(1)
    logits, _ = model(source, shift_right(target))  # (B, L, V)
    expected = torch.nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten())
    torch.testing.assert_close(teacher_forcing_loss(model, (source, target)), expected)


# ---------------------------------------------------------------- input checks


def test_input_errors():
    model = Seq2SeqGRU(V, H, E)
    with pytest.raises(ValueError, match=r"task must be one of \('copy', 'reverse'\), got 'sort'"):
        make_seq2seq_batch(2, 4, V, task="sort")
    with pytest.raises(ValueError, match="vocab_size must be at least 3"):
        make_seq2seq_batch(2, 4, 2)
    with pytest.raises(ValueError, match="length must be positive, got 0"):
        make_seq2seq_batch(2, 0, V)
    with pytest.raises(ValueError, match=r"min_len \(5\) must not exceed max_len \(3\)"):
        train_seq2seq(model, steps=1, min_len=5, max_len=3)


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
