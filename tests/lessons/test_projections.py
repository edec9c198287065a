"""attention_src.projections: the partner task's model, and what the projections buy. (The
task's data, the accuracy and the training: tests/lessons/test_partner.py.)"""

from __future__ import annotations

import math

import pytest
import torch

from attention_src import PartnerAttention
from attention_src.experiments.partner import partner_accuracy, partner_batch
from attention_src.projections import PROJECTIONS

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
