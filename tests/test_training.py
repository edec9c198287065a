"""attention_src.experiments.training: the warm-up schedule, the training loop (warm-up, clipping,
history) and the seeded "which comes first?" experiment. Tiny settings only."""

from __future__ import annotations

import math

import pytest
import torch

from attention_src.experiments.classifier import EncoderClassifier, order_task_batch
from attention_src.experiments.training import (
    accuracy,
    train_loop,
    train_order_classifier,
    warmup_factor,
)

TINY = dict(vocab_size=8, min_len=4, max_len=6, d_model=16, num_heads=2, num_layers=1, d_ff=32)

# --------------------------------------------------------------------------- warm-up


def test_warmup_rises_linearly_then_stays():
    factors = [warmup_factor(s, 4) for s in range(8)]
    assert factors == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0]


def test_warmup_inverse_sqrt_decay_is_the_paper_schedule():
    d_model, w = 512, 4000
    for step in (0, 10, 3998, 3999, 4000, 10_000, 50_000):
        n = step + 1
        paper = d_model**-0.5 * min(n**-0.5, n * w**-1.5)  # Vaswani et al., eq. (3)
        peak = d_model**-0.5 * w**-0.5
        assert math.isclose(warmup_factor(step, w, "inverse_sqrt") * peak, paper, rel_tol=1e-12)


def test_no_warmup_means_full_rate_from_the_start():
    assert [warmup_factor(s, 0) for s in range(3)] == [1.0, 1.0, 1.0]
    assert warmup_factor(3, 0, "inverse_sqrt") == 0.5


@pytest.mark.parametrize(
    ("args", "error", "pattern"),
    [
        ((-1, 4), ValueError, r"step must be >= 0, got -1"),
        ((0, -4), ValueError, r"warmup_steps must be >= 0, got -4"),
        ((0, 4.0), TypeError, r"warmup_steps must be an int, got float 4\.0"),
        ((0, 4, "cosine"), ValueError, r"decay must be one of \['constant', 'inverse_sqrt'\]"),
    ],
)
def test_warmup_bad_arguments(args, error, pattern):
    with pytest.raises(error, match=pattern):
        warmup_factor(*args)


# --------------------------------------------------------------------------- the loop


def _setup(device, seed=0):
    torch.manual_seed(seed)
    model = EncoderClassifier(
        TINY["vocab_size"],
        TINY["d_model"],
        TINY["num_heads"],
        TINY["num_layers"],
        TINY["d_ff"],
        2,
        max_len=TINY["max_len"],
    ).to(device)
    data = torch.Generator(device=device).manual_seed(seed)

    def next_batch():
        return order_task_batch(16, TINY["vocab_size"], 4, 6, generator=data, device=device)

    return model, next_batch


def test_history_has_one_entry_per_step_and_follows_the_schedule(device):
    model, next_batch = _setup(device)
    history = train_loop(model, next_batch, steps=6, lr=0.01, warmup_steps=4)
    assert set(history) == {"loss", "grad_norm", "lr"}
    assert all(len(v) == 6 for v in history.values())
    expected = [0.01 * warmup_factor(s, 4) for s in range(6)]
    assert history["lr"] == pytest.approx(expected)
    assert all(math.isfinite(v) and v > 0 for v in history["grad_norm"])


def test_clipping_caps_the_gradient_that_is_applied(device):
    model, next_batch = _setup(device)
    cap = 1e-3  # far below the gradient norms of this model
    history = train_loop(model, next_batch, steps=2, lr=1e-3, max_grad_norm=cap)
    assert history["grad_norm"][-1] > 10 * cap  # recorded before clipping
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    applied = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    assert applied.item() == pytest.approx(cap, rel=1e-3)  # the last step's, after clipping


def test_without_clipping_the_gradient_is_untouched(device):
    model, next_batch = _setup(device)
    history = train_loop(model, next_batch, steps=1, lr=1e-3, max_grad_norm=None)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    assert norm.item() == pytest.approx(history["grad_norm"][0], rel=1e-5)


def test_training_lowers_the_loss(device):
    model, next_batch = _setup(device)
    history = train_loop(model, next_batch, steps=40, lr=3e-3, warmup_steps=5)
    first, last = sum(history["loss"][:5]) / 5, sum(history["loss"][-5:]) / 5
    assert last < first - 0.05


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        (dict(steps=0, lr=1e-3), r"steps must be positive, got 0"),
        (dict(steps=2, lr=0.0), r"lr must be a positive number, got 0\.0"),
        (dict(steps=2, lr=1e-3, max_grad_norm=0), r"max_grad_norm must be a positive number or"),
    ],
)
def test_loop_bad_arguments(device, kwargs, pattern):
    model, next_batch = _setup(device)
    with pytest.raises(ValueError, match=pattern):
        train_loop(model, next_batch, **kwargs)


def test_accuracy_restores_the_mode(device):
    model, next_batch = _setup(device)
    tokens, lengths, labels = next_batch()
    model.train()
    acc = accuracy(model, tokens, lengths, labels)
    assert model.training and 0.0 <= acc <= 1.0
    logits, _ = model.eval()(tokens, lengths)
    assert acc == (logits.argmax(-1) == labels).float().mean().item()


# --------------------------------------------------------------------------- the experiment


def test_experiment_is_deterministic_and_plain_data(device):
    kwargs = dict(TINY, steps=3, batch_size=8, eval_size=20, seed=1, device=str(device))
    a = train_order_classifier(**kwargs)
    b = train_order_classifier(**kwargs)
    assert a["history"] == b["history"] and a["accuracy"] == b["accuracy"]
    for name, tensor in a["state_dict"].items():
        assert torch.equal(tensor, b["state_dict"][name]), name
        assert tensor.device.type == "cpu"
    c = train_order_classifier(**dict(kwargs, seed=2))
    assert c["history"]["loss"] != a["history"]["loss"]
    model = EncoderClassifier(**a["model_kwargs"])
    model.load_state_dict(a["state_dict"])  # the result rebuilds the trained model


def test_experiment_learns_the_task(device):
    run = train_order_classifier(
        **TINY,
        steps=80,
        batch_size=32,
        lr=1e-2,
        warmup_steps=10,
        eval_size=400,
        seed=0,
        device=str(device),
    )
    assert run["accuracy"] > 0.8  # chance is 0.5: the two classes hold the same tokens
    first, last = run["history"]["loss"][:10], run["history"]["loss"][-10:]
    assert sum(last) < sum(first) / 2
