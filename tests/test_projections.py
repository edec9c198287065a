"""attention_src.projections: the partner task, its model, and what the projections buy."""

from __future__ import annotations

import math

import pytest
import torch

from attention_src import PartnerAttention, partner_batch, train_partner_attention
from attention_src.experiments.partner import partner_accuracy, partner_of
from attention_src.projections import PROJECTIONS

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


# --- the model -----------------------------------------------------------------------------


@pytest.mark.parametrize("projections", PROJECTIONS)
def test_model_shapes_and_parameters(device, gen, projections):
    model = PartnerAttention(16, 12, 4, projections=projections).to(device)
    tokens, _ = partner_batch(5, 3, generator=gen)
    scores = model(tokens)
    assert scores.shape == (5, 6, 6)
    expected = {"none": 16 * 12, "shared": 16 * 12 + 12 * 4, "separate": 16 * 12 + 2 * 12 * 4}
    assert sum(p.numel() for p in model.parameters()) == expected[projections]


@pytest.mark.parametrize("projections", ["none", "shared"])
def test_symmetric_variants_give_symmetric_scores(device, gen, projections):
    model = PartnerAttention(16, 8, projections=projections).to(device)
    tokens, _ = partner_batch(10, 4, generator=gen)
    scores = model(tokens)
    torch.testing.assert_close(scores, scores.transpose(-2, -1))
    if projections == "shared":
        assert model.q_proj is model.k_proj


def test_separate_projections_break_the_symmetry(device, gen):
    model = PartnerAttention(16, 8, projections="separate").to(device)
    tokens, _ = partner_batch(10, 4, generator=gen)
    scores = model(tokens)
    assert not torch.allclose(scores, scores.transpose(-2, -1))
    assert model.q_proj is not model.k_proj


def test_none_variant_scores_are_scaled_dot_products(device, gen):
    model = PartnerAttention(16, 8, projections="none").to(device)
    tokens, _ = partner_batch(3, 4, generator=gen)
    x = model.embed(tokens)
    torch.testing.assert_close(model(tokens), x @ x.transpose(-2, -1) / math.sqrt(8))


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("projections", ["none", "shared"])
def test_symmetric_scores_never_get_both_partners_right(device, seed, projections):
    """The Cauchy–Schwarz bound, for any weights: at most one token per pair is right,
    and the mean loss is at least ln 2. Embeddings are scaled up to make scores large."""
    torch.manual_seed(seed)
    model = PartnerAttention(16, 4, projections=projections).to(device)
    with torch.no_grad():
        model.embed.weight.mul_(3.0)
    tokens, target = partner_batch(
        256, 4, generator=torch.Generator(device=device).manual_seed(seed)
    )
    scores = model(tokens)
    right = scores.argmax(dim=-1) == target
    assert not (right & right.gather(1, target)).any()
    assert partner_accuracy(scores, target) <= 0.5
    loss = torch.nn.functional.cross_entropy(scores.flatten(0, 1), target.flatten())
    assert loss.item() >= math.log(2) - 1e-5


def test_model_errors(device):
    with pytest.raises(ValueError, match=r"projections must be one of .*got 'both'"):
        PartnerAttention(16, 8, projections="both")
    with pytest.raises(ValueError, match="d_k must be positive, got 0"):
        PartnerAttention(16, 8, 0)
    model = PartnerAttention(16, 8).to(device)
    with pytest.raises(ValueError, match=r"tokens must be 2-D \(B, L\)"):
        model(torch.zeros(8, dtype=torch.long, device=device))
    with pytest.raises(TypeError, match=r"tokens must be a torch\.Tensor"):
        model([[0, 1]])


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
