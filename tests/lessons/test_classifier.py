"""attention_src.experiments.classifier: the "does A come before B?" task and EncoderClassifier
(masked mean pooling over the encoder's outputs, then a linear head)."""

from __future__ import annotations

import pytest
import torch

from attention_src.experiments.classifier import (
    PAD,
    TOKEN_A,
    TOKEN_B,
    EncoderClassifier,
    order_task_batch,
)

V, D, H, N, D_FF = 10, 16, 2, 2, 32


# --------------------------------------------------------------------------- the task


@pytest.mark.parametrize(("min_len", "max_len"), [(2, 2), (3, 9), (8, 8)])
def test_order_task_batch_is_well_formed(device, gen, min_len, max_len):
    tokens, lengths, labels = order_task_batch(
        200, V, min_len, max_len, generator=gen, device=device
    )
    assert tokens.shape == (200, max_len) and lengths.shape == (200,) and labels.shape == (200,)
    assert tokens.device.type == device.type and tokens.dtype == torch.long
    assert lengths.min() >= min_len and lengths.max() <= max_len
    positions = torch.arange(max_len, device=device)
    real = positions[None, :] < lengths[:, None]  # (B, L)
    assert (tokens[~real] == PAD).all()
    assert (tokens[real] != PAD).all()
    assert ((tokens == TOKEN_A).sum(dim=1) == 1).all()
    assert ((tokens == TOKEN_B).sum(dim=1) == 1).all()
    pos_a = (tokens == TOKEN_A).float().argmax(dim=1)
    pos_b = (tokens == TOKEN_B).float().argmax(dim=1)
    assert torch.equal(labels, (pos_a < pos_b).long())
    fillers = tokens[real & (tokens != TOKEN_A) & (tokens != TOKEN_B)]
    assert (fillers > TOKEN_B).all() and (fillers < V).all()


def test_order_task_labels_and_positions_are_balanced(device, gen):
    tokens, _, labels = order_task_batch(4000, V, 6, 6, generator=gen, device=device)
    assert 0.45 < labels.float().mean().item() < 0.55
    pos_a = (tokens == TOKEN_A).float().argmax(dim=1)
    counts = torch.bincount(pos_a, minlength=6).float() / 4000
    assert (counts - 1 / 6).abs().max() < 0.03  # A lands on every position alike


def test_order_task_is_reproducible(device):
    a = order_task_batch(
        8, V, 3, 7, generator=torch.Generator(device=device).manual_seed(3), device=device
    )
    b = order_task_batch(
        8, V, 3, 7, generator=torch.Generator(device=device).manual_seed(3), device=device
    )
    for x, y in zip(a, b, strict=True):
        assert torch.equal(x, y)


@pytest.mark.parametrize(
    ("args", "error", "pattern"),
    [
        ((0, V, 3, 5), ValueError, r"batch_size must be positive, got 0"),
        ((4, 3, 3, 5), ValueError, r"vocab_size must be at least 4 \(PAD, A, B and one filler\)"),
        ((4, V, 1, 5), ValueError, r"min_len must be at least 2 \(room for A and B\), got 1"),
        ((4, V, 6, 5), ValueError, r"max_len \(5\) must be >= min_len \(6\)"),
        ((4, V, 3, 5.0), TypeError, r"max_len must be an int, got float 5\.0"),
    ],
)
def test_order_task_bad_arguments(args, error, pattern):
    with pytest.raises(error, match=pattern):
        order_task_batch(*args)


# --------------------------------------------------------------------------- the classifier


def _model(device, **kwargs) -> EncoderClassifier:
    return EncoderClassifier(V, D, H, N, D_FF, 3, max_len=12, **kwargs).to(device).eval()


@pytest.mark.parametrize("norm_first", [False, True])
def test_classifier_shapes(device, gen, norm_first):
    model = _model(device, norm_first=norm_first)
    tokens, lengths, _ = order_task_batch(5, V, 3, 9, generator=gen, device=device)
    logits, weights = model(tokens, lengths)
    assert logits.shape == (5, 3)
    assert len(weights) == N and all(w.shape == (5, H, 9, 9) for w in weights)
    logits_all, _ = model(tokens)  # no lengths: every position counts as real
    assert logits_all.shape == (5, 3)


def test_classifier_pools_over_real_tokens_only(device, gen):
    model = _model(device)
    tokens, lengths, _ = order_task_batch(6, V, 3, 9, generator=gen, device=device)
    changed = tokens.clone()
    real = torch.arange(9, device=device)[None, :] < lengths[:, None]
    changed[~real] = TOKEN_B + 1  # padding replaced by a filler id
    torch.testing.assert_close(model(changed, lengths)[0], model(tokens, lengths)[0])
    # negative control: counting the padding as real changes the logits
    assert (model(tokens)[0] - model(tokens, lengths)[0]).abs().max() > 1e-4


def test_classifier_matches_manual_pooling(device, gen):
    model = _model(device)
    tokens, lengths, _ = order_task_batch(4, V, 3, 9, generator=gen, device=device)
    logits, _ = model(tokens, lengths)
    for b in range(4):
        n = int(lengths[b])
        x, _ = model.encoder(tokens[b : b + 1, :n])  # the sequence without its padding
        torch.testing.assert_close(logits[b], model.head(x.mean(dim=1))[0])


@pytest.mark.parametrize(
    ("lengths", "error", "pattern"),
    [
        ([3, 3], TypeError, r"lengths must be a torch\.Tensor, got list"),
        (torch.tensor([3.0, 3.0]), TypeError, r"lengths must be integer lengths, got dtype"),
        (torch.tensor([[3, 3]]), ValueError, r"lengths must be 1-D \(B,\), got 2-D shape \(1, 2\)"),
        (torch.tensor([3, 3, 3]), ValueError, r"one length per sequence: tokens shape \(2, 5\)"),
        (torch.tensor([0, 3]), ValueError, r"lengths must be in \[1, 5\] .* from 0 to 3"),
        (torch.tensor([6, 3]), ValueError, r"lengths must be in \[1, 5\] .* from 3 to 6"),
    ],
)
def test_classifier_bad_lengths(lengths, error, pattern):
    model = _model("cpu")
    tokens = torch.full((2, 5), TOKEN_B + 1)
    with pytest.raises(error, match=pattern):
        model(tokens, lengths)


def test_classifier_checks_tokens_before_lengths():
    model = _model("cpu")
    with pytest.raises(TypeError, match=r"tokens must be integer token ids"):
        model(torch.zeros(2, 5), torch.tensor([5, 5]))


def test_classifier_bad_num_classes():
    with pytest.raises(ValueError, match=r"num_classes must be positive, got 0"):
        EncoderClassifier(V, D, H, N, D_FF, 0)
