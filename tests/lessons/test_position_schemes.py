"""attention_src.experiments.position_schemes: the offset task against previous_token_batch, the
tagger's masks (causal, window, ALiBi) against the modules that make them, training
that learns, and the input checks."""

from __future__ import annotations

import pytest
import torch

from attention_src.alibi import alibi_bias
from attention_src.experiments.position_schemes import (
    POSITION_SCHEMES,
    PositionTagger,
    offset_accuracy,
    offset_batch,
    run_position_experiment,
    tagger_attention,
    tagger_mask,
)
from attention_src.experiments.tagger import IGNORE_INDEX, previous_token_batch
from attention_src.masks import causal_mask
from attention_src.rope import rope_angles
from attention_src.windows import sliding_window_mask


def test_offset_batch_generalises_previous_token_batch(device):
    g1 = torch.Generator(device=device).manual_seed(3)
    g2 = torch.Generator(device=device).manual_seed(3)
    tokens, targets = offset_batch(4, 9, 7, generator=g1, device=device)
    ref_tokens, ref_targets = previous_token_batch(4, 9, 7, generator=g2, device=device)
    assert torch.equal(tokens, ref_tokens) and torch.equal(targets[..., 0], ref_targets)
    tokens, targets = offset_batch(3, 6, 5, (1, 3), generator=g1, device=device)
    assert targets.shape == (3, 6, 2)
    for t in range(6):
        for r, o in enumerate((1, 3)):
            expected = tokens[:, t - o] if t >= o else torch.full_like(tokens[:, 0], IGNORE_INDEX)
            assert torch.equal(targets[:, t, r], expected)


@pytest.mark.parametrize("scheme", POSITION_SCHEMES)
def test_tagger_shapes_and_masks(device, scheme):
    max_len = 20 if scheme in ("sinusoidal", "learned") else None
    model = PositionTagger(11, 16, 4, scheme, max_len=max_len, num_kv_heads=2, causal=True)
    model.to(device)
    tokens = torch.randint(11, (2, 7), device=device)
    assert model(tokens).shape == (2, 7, 1, 11)
    x = model.embedding(tokens)
    mask = model.scores_mask(x)
    if scheme == "alibi":
        expected = alibi_bias(4, 7, 7, device=device).masked_fill(
            ~causal_mask(7, device=device), float("-inf")
        )
        torch.testing.assert_close(mask[0], expected)
    else:
        assert torch.equal(mask, causal_mask(7, device=device))
    windowed = PositionTagger(11, 16, 4, "rope", causal=True, window=3).to(device)
    assert torch.equal(windowed.scores_mask(x), sliding_window_mask(7, 7, 3, device=device))
    assert PositionTagger(11, 16, 4, "rope").to(device).scores_mask(x) is None


def test_the_taggers_parts(device):
    """tagger_attention: G = H unless told; tagger_mask: what scores_mask hands on."""
    assert tagger_attention(16, 4).num_kv_heads == 4
    assert tagger_attention(16, 4, 1).num_kv_heads == 1
    assert tagger_mask("rope", 4, 7) is None
    window = tagger_mask("none", 4, 7, causal=True, window=2, device=device)
    assert torch.equal(window, sliding_window_mask(7, 7, 2, device=device))
    bias = tagger_mask("alibi", 4, 7, device=device)  # not causal: no -inf
    torch.testing.assert_close(bias[0], alibi_bias(4, 7, 7, device=device))


def test_rope_tagger_hands_its_angles_to_the_attention(device):
    """The tagger (the model) computes the rotation angles once and passes them to its
    attention layer; the layer itself rotates nothing unless given them."""
    rope = PositionTagger(11, 16, 4, "rope", rope_base=100.0).to(device)
    plain = PositionTagger(11, 16, 4, "none").to(device)
    plain.load_state_dict(rope.state_dict())  # the same weights: RoPE has no parameters
    assert rope.rotary.base == 100.0 and plain.rotary is None
    tokens = torch.randint(11, (2, 7), device=device)
    x = rope.embedding(tokens)  # (2, 7, 16)
    out, _ = rope.attn(x, rope=rope_angles(torch.arange(7, device=device), 4, 100.0))
    torch.testing.assert_close(rope(tokens), rope.head(x + out).unflatten(-1, (1, 11)))
    assert not torch.allclose(rope(tokens), plain(tokens))


def test_causal_tagger_ignores_the_future(device):
    model = PositionTagger(11, 16, 4, "alibi", causal=True).to(device)
    tokens = torch.randint(11, (2, 8), device=device)
    changed = tokens.clone()
    changed[:, 5:] = (changed[:, 5:] + 1) % 11
    torch.testing.assert_close(model(changed)[:, :5], model(tokens)[:, :5])
    assert (model(changed)[:, 5:] - model(tokens)[:, 5:]).abs().max() > 1e-4


def test_training_learns_the_previous_token(device):
    settings = dict(
        positions="rope",
        vocab_size=6,
        d_model=16,
        num_heads=2,
        max_train_len=6,
        steps=60,
        batch_size=16,
        lr=1e-2,
        seed=0,
        device=device,
        causal=True,
    )
    run = run_position_experiment(eval_lengths=[6], num_sequences=64, **settings)
    assert run["losses"][-1] < 0.5 * run["losses"][0]
    assert run["accuracy"][0] > 0.9
    untrained = PositionTagger(**run["model_kwargs"]).to(device)
    assert offset_accuracy(untrained, [6], num_sequences=64, device=device)[0] < 0.5


def test_errors(device):
    with pytest.raises(ValueError, match="positions must be one of"):
        PositionTagger(5, 8, 2, "rotary")
    with pytest.raises(ValueError, match="needs max_len"):
        PositionTagger(5, 8, 2, "learned")
    with pytest.raises(ValueError, match="a window needs causal=True"):
        PositionTagger(5, 8, 2, "rope", window=4)
    with pytest.raises(ValueError, match="offsets must be positive ints"):
        offset_batch(2, 5, 5, (0,))
    with pytest.raises(ValueError, match="has no target for offset 3"):
        offset_accuracy(PositionTagger(5, 8, 2).to(device), [3], (3,), device=device)
    with pytest.raises(TypeError, match=r"every length must be an int, got 4\.0"):
        offset_accuracy(PositionTagger(5, 8, 2).to(device), [4.0], device=device)
    with pytest.raises(ValueError, match=r"token ids must be in \[0, 5\)"):
        PositionTagger(5, 8, 2).to(device)(torch.full((1, 3), 7, device=device))
