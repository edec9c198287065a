"""attention_src.experiments.partner: the partner task's data, the accuracy, and the
training of PartnerAttention with and without projections."""

from __future__ import annotations

import math

import pytest
import torch

from attention_src import PartnerAttention, partner_batch, train_partner_attention
from attention_src.experiments.partner import partner_accuracy, partner_of

# --- the data ------------------------------------------------------------------------------


@pytest.mark.parametrize(("num_pairs", "vocab_size"), [(1, 2), (4, 16), (3, 6), (8, 16)])
def test_partner_batch_every_target_points_at_the_partner(gen, num_pairs, vocab_size):
    tokens, target = partner_batch(64, num_pairs, vocab_size, generator=gen)
    L = 2 * num_pairs
    assert tokens.shape == (64, L) and target.shape == (64, L)
    assert tokens.device == gen.device
    assert torch.equal(tokens.gather(1, target), partner_of(tokens))
    assert (target != torch.arange(L, device=tokens.device)).all()  # never itself
    assert ((tokens >= 0) & (tokens < vocab_size)).all()
    # every token appears at most once per sequence
    assert (tokens.sort(dim=-1).values.diff(dim=-1) > 0).all()


def test_partner_of_is_an_involution_without_fixed_points(device):
    tokens = torch.arange(16, device=device)
    assert torch.equal(partner_of(partner_of(tokens)), tokens)
    assert (partner_of(tokens) != tokens).all()
    assert partner_of(tokens)[:4].tolist() == [1, 0, 3, 2]


def test_partner_batch_is_deterministic_and_shuffled(device):
    a = partner_batch(32, 4, generator=torch.Generator(device=device).manual_seed(7))
    b = partner_batch(32, 4, generator=torch.Generator(device=device).manual_seed(7))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    c = partner_batch(32, 4, generator=torch.Generator(device=device).manual_seed(8))
    assert not torch.equal(a[0], c[0])
    # partners are not always in the same places
    assert len({tuple(t) for t in a[1].tolist()}) > 1


def test_partner_batch_without_generator_uses_device(device):
    tokens, target = partner_batch(4, 2, 8, device=device)
    assert tokens.device.type == torch.device(device).type
    assert torch.equal(tokens.gather(1, target), partner_of(tokens))


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((4, 5, 8), ValueError, r"hold num_pairs \(5\) distinct pairs \(at most"),
        ((4, 2, 7), ValueError, r"vocab_size \(7\) must be even"),
        ((0, 2, 8), ValueError, "batch_size must be positive, got 0"),
        ((4, 2.0, 8), TypeError, "num_pairs must be an int"),
    ],
)
def test_partner_batch_errors(args, error, match):
    with pytest.raises(error, match=match):
        partner_batch(*args)


def test_partner_accuracy(device):
    scores = torch.tensor([[[0.0, 5.0], [1.0, 0.0]]], device=device)  # argmax: 1, 0
    assert partner_accuracy(scores, torch.tensor([[1, 0]], device=device)) == 1.0
    assert partner_accuracy(scores, torch.tensor([[1, 1]], device=device)) == 0.5
    with pytest.raises(ValueError, match="must agree on"):
        partner_accuracy(scores, torch.tensor([1, 0], device=device))


# --- training ------------------------------------------------------------------------------

TINY = dict(num_pairs=2, vocab_size=8, d_model=8, d_k=4, steps=30, batch_size=16, lr=0.05)


def test_training_is_deterministic_under_a_seed():
    short = {**TINY, "steps": 10}
    a = train_partner_attention("separate", seed=3, **short)
    b = train_partner_attention("separate", seed=3, **short)
    assert a["losses"] == b["losses"] and a["accuracy"] == b["accuracy"]
    for name in a["state"]:
        assert torch.equal(a["state"][name], b["state"][name])
    c = train_partner_attention("separate", seed=4, **short)
    assert c["losses"] != a["losses"]


def test_training_with_projections_learns_the_task():
    result = train_partner_attention("separate", seed=0, **TINY)
    assert result["losses"][-1] < 0.5 * result["losses"][0]
    assert result["accuracy"] > 0.9
    assert result["loss_steps"] == [*range(0, 30, 10), 29]
    assert result["num_parameters"] == 8 * 8 + 2 * 8 * 4


def test_training_without_projections_stays_at_the_bound():
    result = train_partner_attention("none", seed=0, **TINY)
    assert result["losses"][-1] < result["losses"][0]  # it does learn something...
    assert min(result["losses"]) >= math.log(2) - 1e-5  # ...but never passes ln 2
    assert result["accuracy"] <= 0.5


def test_training_state_loads_into_a_fresh_model():
    result = train_partner_attention("shared", seed=0, **TINY)
    model = PartnerAttention(8, 8, 4, projections="shared")
    model.load_state_dict(result["state"])
    tokens, target = partner_batch(100, 2, 8, generator=torch.Generator().manual_seed(10_000))
    assert partner_accuracy(model(tokens), target) <= 0.5
