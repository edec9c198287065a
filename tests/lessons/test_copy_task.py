"""attention_src.experiments.copy_task: the copy task (a random half, then the same again)
and the training of a DecoderOnlyLM on it."""

from __future__ import annotations

import pytest
import torch

from attention_src.decoder import DecoderOnlyLM
from attention_src.experiments.copy_task import copy_task_batch, next_token_loss, train_copy_model

# --------------------------------------------------------------------------- the task


def test_copy_task_batch(device):
    g1 = torch.Generator(device=device).manual_seed(3)
    g2 = torch.Generator(device=device).manual_seed(3)
    a = copy_task_batch(4, 5, 7, generator=g1, device=device)
    b = copy_task_batch(4, 5, 7, generator=g2, device=device)
    assert a.shape == (4, 10) and a.dtype == torch.long and a.device.type == device.type
    assert torch.equal(a, b)
    assert torch.equal(a[:, 5:], a[:, :5])
    assert a.min() >= 0 and a.max() < 7
    with pytest.raises(ValueError, match="half_len must be positive, got 0"):
        copy_task_batch(4, 0, 7)


TINY_MODEL = dict(vocab_size=6, d_model=16, num_heads=2, num_layers=1, d_ff=32)
TINY = dict(TINY_MODEL, half_len=4, batch_size=16, lr=3e-2, seed=0)


def test_training_reduces_loss_and_is_deterministic(device):
    first = train_copy_model(**TINY, steps=30, device=str(device))
    again = train_copy_model(**TINY, steps=10, device=str(device))
    losses = first["losses"]
    assert len(losses) == 30
    assert sum(losses[-5:]) / 5 < 0.85 * sum(losses[:5]) / 5
    assert losses[:10] == again["losses"]  # same seed, same data, same steps
    model = DecoderOnlyLM(**first["model_kwargs"])
    model.load_state_dict(first["state_dict"])  # the stored weights fit the stored settings
    assert model.max_len == 2 * TINY["half_len"] and model.causal
    assert all(t.device.type == "cpu" for t in first["state_dict"].values())


def test_next_token_loss_scores_token_t_plus_1_from_tokens_up_to_t(device):
    torch.manual_seed(0)
    model = DecoderOnlyLM(**dict(TINY_MODEL, max_len=8)).to(device)
    seq = torch.randint(6, (2, 8), device=device)  # (B, L + 1)
    logits, _ = model(seq[:, :-1])  # (B, L, V)
    expected = torch.nn.functional.cross_entropy(logits.flatten(0, 1), seq[:, 1:].flatten())
    torch.testing.assert_close(next_token_loss(model, seq), expected)
