"""attention_src.experiments.tagger: the previous-token task, the one-layer tagger of the
positional-encoding chapter, its training and its accuracy per length."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attention_src.experiments.tagger import (
    IGNORE_INDEX,
    OneLayerTagger,
    previous_token_accuracy,
    previous_token_batch,
    run_tagger_experiment,
    tagging_loss,
    train_tagger,
)

# --------------------------------------------------------------------------- the task


def test_previous_token_targets(device, gen):
    tokens, targets = previous_token_batch(4, 9, 7, generator=gen, device=device)
    assert tokens.shape == targets.shape == (4, 9)
    assert tokens.device.type == device.type and tokens.dtype == torch.long
    assert (targets[:, 0] == IGNORE_INDEX).all()
    assert torch.equal(targets[:, 1:], tokens[:, :-1])
    assert 0 <= tokens.min() and tokens.max() < 7


def test_previous_token_batch_is_seeded(device):
    def draw():
        g = torch.Generator(device=device).manual_seed(3)
        return previous_token_batch(2, 5, 10, generator=g, device=device)

    (a, _), (b, _) = draw(), draw()
    assert torch.equal(a, b)


@pytest.mark.parametrize(
    ("args", "pattern"),
    [((0, 5, 10), r"batch_size must be positive"), ((2, 0, 10), r"length must be positive")],
)
def test_previous_token_batch_bad_arguments(args, pattern):
    with pytest.raises(ValueError, match=pattern):
        previous_token_batch(*args)


# --------------------------------------------------------------------------- the model


@pytest.mark.parametrize("positions", ["sinusoidal", "learned", "none"])
def test_tagger_shapes(device, positions):
    model = OneLayerTagger(10, 16, 2, max_len=12, positions=positions).to(device)
    tokens = torch.randint(10, (3, 7), device=device)
    assert model(tokens).shape == (3, 7, 10)


def test_tagger_without_positions_is_permutation_equivariant(device):
    model = OneLayerTagger(10, 16, 2, max_len=12, positions="none").to(device)
    tokens = torch.randint(10, (2, 8), device=device)
    perm = torch.randperm(8, device=device)
    torch.testing.assert_close(model(tokens[:, perm]), model(tokens)[:, perm])


def test_tagger_with_positions_is_not(device):
    model = OneLayerTagger(10, 16, 2, max_len=12, positions="sinusoidal").to(device)
    tokens = torch.arange(8, device=device)[None]  # distinct tokens
    perm = torch.tensor([1, 0, 2, 3, 4, 5, 6, 7], device=device)
    assert not torch.allclose(model(tokens[:, perm]), model(tokens)[:, perm])


def test_tagger_learned_refuses_long_inputs(device):
    model = OneLayerTagger(10, 16, 2, max_len=6, positions="learned").to(device)
    with pytest.raises(ValueError, match=r"sequence length 7 exceeds max_len=6"):
        model(torch.zeros(1, 7, dtype=torch.long, device=device))


@pytest.mark.parametrize(
    ("tokens", "error", "pattern"),
    [
        (torch.zeros(1, 3), TypeError, r"tokens must be integer token ids"),
        (torch.zeros(3, dtype=torch.long), ValueError, r"tokens must be 2-D \(B, L\)"),
        (
            torch.full((1, 3), 10),
            ValueError,
            r"tokens: token ids must be in \[0, 10\), got values from 10",
        ),
    ],
)
def test_tagger_bad_tokens(tokens, error, pattern):
    with pytest.raises(error, match=pattern):
        OneLayerTagger(10, 8, 2, max_len=4)(tokens)


def test_tagger_bad_positions():
    with pytest.raises(ValueError, match=r'positions must be "sinusoidal", "learned" or "none"'):
        OneLayerTagger(10, 8, 2, max_len=4, positions="rotary")


# --------------------------------------------------------------------------- training


TINY = dict(vocab_size=6, d_model=16, num_heads=2, max_len=8, max_train_len=8, batch_size=32)


def test_training_lowers_the_loss(device):
    run = train_tagger(**TINY, positions="learned", steps=40, lr=1e-2, seed=0, device=device)
    losses = run["losses"]
    assert len(losses) == 40
    assert sum(losses[-8:]) / 8 < 0.8 * sum(losses[:8]) / 8
    model = OneLayerTagger(**run["model_kwargs"])
    model.load_state_dict(run["state_dict"])  # round trip through plain data


def test_training_is_deterministic_under_a_seed(device):
    settings = dict(TINY, positions="sinusoidal", steps=4, lr=1e-2, seed=3, device=device)
    first, second = train_tagger(**settings), train_tagger(**settings)
    assert first["losses"] == second["losses"]
    for name, tensor in first["state_dict"].items():
        assert torch.equal(tensor, second["state_dict"][name]), name


def test_experiment_reports_accuracy_per_length(device):
    run = run_tagger_experiment(
        **dict(TINY, positions="sinusoidal", steps=5, lr=1e-2, seed=1, device=device),
        eval_lengths=[2, 5, 8],
        num_sequences=16,
    )
    assert run["eval_lengths"] == [2, 5, 8]
    assert len(run["accuracy"]) == 3 and all(0.0 <= a <= 1.0 for a in run["accuracy"])


def test_accuracy_counts_only_positions_with_a_target(device):
    class Oracle(OneLayerTagger):
        """Predicts the previous token exactly; position 0 gets a wrong guess."""

        def forward(self, tokens):
            previous = torch.roll(tokens, 1, dims=1)
            previous[:, 0] = (tokens[:, 0] + 1) % self.vocab_size
            return nn.functional.one_hot(previous, self.vocab_size).float()

    oracle = Oracle(5, 4, 1, max_len=10).to(device)
    assert previous_token_accuracy(oracle, [2, 10], num_sequences=8, device=device) == [1.0, 1.0]


def test_accuracy_rejects_length_one():
    model = OneLayerTagger(5, 4, 1, max_len=10)
    with pytest.raises(ValueError, match=r"every length must be an int >= 2"):
        previous_token_accuracy(model, [1])
    with pytest.raises(TypeError, match=r"every length must be an int, got 2\.0"):
        previous_token_accuracy(model, [2.0])  # a wrong type is a TypeError


def test_train_bad_max_train_len():
    with pytest.raises(ValueError, match=r"max_train_len must be in \[2, max_len=8\], got 9"):
        train_tagger(**dict(TINY, max_train_len=9), positions="none", steps=1, lr=1e-3, seed=0)


def test_tagging_loss_skips_ignored_targets(device):
    logits = torch.tensor([[[2.0, 0.0], [0.0, 3.0]]], device=device)  # (B, L, V)
    targets = torch.tensor([[IGNORE_INDEX, 1]], device=device)  # (B, L)

    class Fixed(nn.Module):
        def forward(self, tokens):
            return logits

    loss = tagging_loss(Fixed(), (None, targets))
    expected = nn.functional.cross_entropy(logits[0, 1:], targets[0, 1:])  # position 1 only
    torch.testing.assert_close(loss, expected)
